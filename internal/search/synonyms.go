package search

import "strings"

// synonymGroups is the hand-written synonym layer: words a model writing a
// search query uses interchangeably with the words tool authors use. Each line
// is a group; every word in it is a synonym of every other. The layer is
// applied to query terms only, and a synonym match scores synonymWeight times
// what the literal term would (the literal word is always preferred).
//
// Keep it generic: a group belongs here when it is true of tool catalogs in
// general (verbs of CRUD, common nouns of developer tools), never to rescue
// one query of the evaluation set.
//
// Since issue 23, WordNet (package wordnet, expand.go) supplies general
// English synonyms and derived forms; the groups it covers fully (close/shut,
// merge/combine, label/tag, invoice/bill, customer/client, citation/cite,
// attachment/attach, price/pricing) were removed. What is left is
// domain vocabulary WordNet does not link (issue/ticket, repository/project,
// deploy/ship…): 1,490 of the table's 1,568 word pairs.
var synonymGroups = []string{
	// Verbs.
	"get fetch read retrieve obtain load view show",
	"list enumerate show browse all",
	"delete remove erase destroy purge trash discard",
	"create make new add generate build post",
	"update edit modify change patch alter set rename",
	"search find query lookup locate discover filter",
	"run execute exec invoke trigger call perform",
	"start begin launch open kick",
	"stop end halt terminate kill",
	"cancel abort revoke stop",
	"send post publish notify ping tell",
	"write save store put persist overwrite",
	"upload attach put",
	"download get fetch",
	"copy duplicate clone",
	"move transfer relocate rename",
	"restart redeploy reload rollout",
	"rollback revert undo restore",
	"deploy publish ship release rollout",
	"install setup add",
	"uninstall remove",
	"upgrade update bump",
	"assign reassign owner assignee",
	"archive hide",
	"unarchive restore",
	"subscribe watch follow notify",
	"favorite star bookmark pin",
	"check verify inspect validate",
	"describe explain detail inspect",
	"convert transform parse",
	"extract scrape pull",
	"crawl spider",
	"analyze diagnose troubleshoot debug investigate",
	"type enter input fill",
	"click press tap",
	"select choose pick",
	"remember memorize memory",
	"forget delete",
	"approve review",
	"resolve close fix",

	// Nouns.
	"issue ticket bug",
	"task issue subtask",
	"child subtask subissue",
	"record object item entry row",
	"lower reduce decrease optimize minimize",
	"analyze analysis analytics",
	"know knowledge",
	"whoami viewer self authenticated",
	"login authenticate session",
	"prefix pattern",
	"message msg chat post",
	"comment reply note",
	"user member person people account",
	"team workspace",
	"organization company",
	"repository project",
	"directory folder",
	"file document",
	"document doc page",
	"documentation docs doc reference guide manual",
	"screenshot capture screen",
	"snapshot capture",
	"video screencast recording",
	"record capture",
	"url link address",
	"website site webpage page",
	"tab page window",
	"browser page",
	"console log",
	"log logs",
	"network request http",
	"error exception crash failure problem",
	"cycle sprint iteration",
	"priority urgency urgent important",
	"status state progress",
	"version revision release",
	"secret credential password token",
	"key token credential",
	"environment variable env",
	"database table",
	"sql query",
	"cache kv store keyvalue",
	"bucket storage",
	"object blob",
	"pricing cost", // price–pricing: WordNet (derived form)
	"cost spend billing bill budget",
	"payment charge pay",
	"refund reimburse",
	"subscription plan",
	"contact person lead",
	"association link relation relationship associate",
	"property field attribute column",
	"schema structure",
	"reaction emoji react",
	"thread replies",
	"channel room",
	"notification alert inbox",
	"workflow automation",
	"template starter boilerplate scaffold",
	"analytics metrics statistics usage",
	"credit balance usage quota",
	"alarm timer",
	"route pattern",
	"domain hostname",
	"zone dns domain",
	"function lambda serverless",
	"migration schema ddl",
	"extension plugin addon",
	"embedding vector",
	"image picture photo",
	"model llm",
	"pod container",
	"deployment app",
	"cluster kubernetes",
	"namespace project",
	"manifest yaml",
	"vm compute virtual machine",
	"recommendation advice suggestion advisor",
	"compliance policy governance",
	"role permission access rbac",
	"secret vault",
	"entity node",
	"observation fact",
	"relation link",
	"graph knowledge memory",
	"paper article publication research",
	"news article",
	"place business restaurant shop location",
	"nearby local near",
	"directions route",
	"distance far travel drive",
	"accessibility aria",
	"performance speed fast slow",
	"trace profile",
	"heap memory leak",
	"css style",
	"keyboard key",
	"back previous history",
	"evaluate run execute",
	"javascript script code",
	"drag drop",
	"emulate simulate mimic",
	"viewport window screen size resize",
	"size big large bytes",
	"modified changed updated",
	"darkmode color scheme",
	"cli command",
	"sum add",

	// Catalog-driven additions (from reading the tool catalog, not queries).
	"metadata info details stat",
	"tree hierarchy recursive",
	"media binary base64",
	"glob wildcard pattern",
	"history activity",
	"datasource database",
	"append insert add",
	"content body text",
	"navigate visit goto go",
	"element selector",
	"form field input",
	"pdf document",
	"expiry expiration ttl expire",
	"library package framework sdk",
	"shell terminal command exec",
	"replica instance",
	"crm contact deal company",
	"iac infrastructure bicep terraform",
	"dashboard grafana workbook visualization",
	"configure configuration setting settings option preference",
	"toggle enable disable switch",
	"health availability uptime",
	"initiative goal objective",
	"checkout payment",
	"kql kusto",
	"cosmos nosql",
	"registry acr",
	"aks kubernetes",
	"connection network",
	"slow throttle",
}

// synonymWeight is how much a synonym match counts relative to the literal
// query term (measured on the dev split; see searcheval).
const synonymWeight = 0.5

// synonymAbsentWeight replaces synonymWeight when the catalog does not contain
// the query word at all.
const synonymAbsentWeight = 1.0

// synonyms maps a stemmed term to its stemmed synonyms (itself excluded).
var synonyms = buildSynonyms(synonymGroups)

func buildSynonyms(groups []string) map[string][]string {
	m := map[string][]string{}
	for _, g := range groups {
		var terms []string
		for _, w := range strings.Fields(g) {
			for _, t := range Terms(w) {
				terms = appendUnique(terms, t)
			}
		}
		for _, t := range terms {
			for _, u := range terms {
				if u != t {
					m[t] = appendUnique(m[t], u)
				}
			}
		}
	}
	return m
}

func appendUnique(s []string, v string) []string {
	for _, x := range s {
		if x == v {
			return s
		}
	}
	return append(s, v)
}
