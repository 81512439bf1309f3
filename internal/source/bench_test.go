package source

import "testing"

const benchJS = `// Find open issues assigned to me and summarise them.
const me = await tools.callValue("github.whoami", {});
const issues = [];
let page = 1;
while (true) {
  const res = await tools.callValue("github.list_issues", { state: "open", page, perPage: 100 });
  if (!res?.items?.length) break;
  for (const it of res.items) {
    if (it.assignee?.login === me.login) {
      issues.push({ id: it.number, title: it.title, labels: it.labels.map((l) => l.name) });
    }
  }
  page++;
}
const byLabel = new Map();
for (const issue of issues) {
  for (const label of issue.labels.length ? issue.labels : ["(none)"]) {
    byLabel.set(label, (byLabel.get(label) ?? 0) + 1);
  }
}
const top = [...byLabel.entries()].sort((a, b) => b[1] - a[1]).slice(0, 5);
console.log("issues: " + issues.length);
const urgent = issues.filter((i) => /urgent|p0/i.test(i.title));
text("Top labels:\n" + top.map(([l, n]) => ` + "`- ${l}: ${n}`" + `).join("\n"));
if (urgent.length > 0) {
  json({ urgent: urgent.map((i) => i.id) });
}
const summary = { total: issues.length, urgent: urgent.length, top };
return summary;
`

const benchTS = `// Find open issues assigned to me and summarise them.
interface Issue { id: number; title: string; labels: string[] }
type Page = { items?: Array<{ number: number; title: string; assignee?: { login: string }; labels: { name: string }[] }> };
const me = await tools.callValue("github.whoami", {}) as { login: string };
const issues: Issue[] = [];
let page: number = 1;
while (true) {
  const res = await tools.callValue("github.list_issues", { state: "open", page, perPage: 100 }) as Page;
  if (!res?.items?.length) break;
  for (const it of res.items) {
    if (it.assignee?.login === me.login) {
      issues.push({ id: it.number, title: it.title, labels: it.labels.map((l) => l.name) });
    }
  }
  page++;
}
const byLabel = new Map<string, number>();
for (const issue of issues) {
  for (const label of issue.labels.length ? issue.labels : ["(none)"]) {
    byLabel.set(label, (byLabel.get(label) ?? 0) + 1);
  }
}
const top: [string, number][] = [...byLabel.entries()].sort((a, b) => b[1] - a[1]).slice(0, 5);
console.log("issues: " + issues.length);
const urgent = issues.filter((i: Issue): boolean => /urgent|p0/i.test(i.title));
text("Top labels:\n" + top.map(([l, n]) => ` + "`- ${l}: ${n}`" + `).join("\n"));
if (urgent.length > 0) {
  json({ urgent: urgent.map((i) => i.id) } satisfies Record<string, number[]>);
}
return { total: issues.length, urgent: urgent.length, top };
`

func BenchmarkPrepareJS(b *testing.B) {
	b.SetBytes(int64(len(benchJS)))
	b.ReportAllocs()
	for b.Loop() {
		if _, err := Prepare(benchJS, JavaScript); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkPrepareTS(b *testing.B) {
	b.SetBytes(int64(len(benchTS)))
	b.ReportAllocs()
	for b.Loop() {
		if _, err := Prepare(benchTS, TypeScript); err != nil {
			b.Fatal(err)
		}
	}
}
