// The same in TypeScript: types are stripped (no type checking), then it runs like JavaScript.
interface Point { x: number; y: number }
const points: Point[] = [{ x: 1, y: 2 }, { x: 3, y: 4 }];
const norm = (p: Point): number => Math.hypot(p.x, p.y);
return points.map(norm);
