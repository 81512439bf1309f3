// A first cell: the body of an async function. Output goes to `output`, the return value to `value`.
console.log("catalog size:", ALL_TOOLS.length);
const squares = [1, 2, 3, 4].map((n) => n * n);
await new Promise((resolve) => setTimeout(resolve, 10)); // host timers work too
return { squares, sum: squares.reduce((a, b) => a + b, 0), when: new Date(0).toISOString() };
