// Package schemahint renders JSON Schema as compact TypeScript for code
// mode: one-line input and output hints for the quick index and ALL_TOOLS
// (InputHint, OutputHint) and the virtual declaration files read through
// API.read: mcp/index.d.ts (RenderIndexDTS), mcp/<server>.d.ts
// (RenderServerDTS) and one tool's header for MCP.<server>.$api
// (RenderToolDTS).
//
// Schemas and descriptions come from MCP servers and are untrusted. Every
// output is deterministic and bounded, and no input text can leave the token
// it is rendered in:
//
//   - Parse accepts at most 1 MiB and 64 levels of nesting and keeps the
//     schema's own key order (FromValue, given Go maps, sorts keys).
//   - Property names that are not ASCII identifiers, and every string
//     literal, are JSON-quoted with control, format (bidi, zero-width) and
//     line-separator characters escaped.
//   - Descriptions lose control and format characters, are cut to a rune
//     bound, and have "*/" and "/*" broken up ("*\/", "/\*") and a '@' at a
//     line start escaped, so they cannot end a JSDoc block or add tags.
//   - Compact hints: at most maxLen bytes (degrading by dropping notes, then
//     collapsing nested objects, then listing the properties that fit and
//     `…`); enums and unions show 6 members, tuples 8, literals up to 64
//     bytes. Output hints are exact or absent (at most 32 enum and 16 union
//     members, 16 tuple elements, 128-byte literals).
//   - Declarations: 200 properties per object, 64 enum and 32 union members,
//     256-byte literals and names, 8 nested object levels, 32 KiB per tool
//     and 256 KiB per file (DTSOptions), descriptions 600 runes and
//     property docs 200 runes.
//
// Keywords this package does not render ($ref, allOf, not, if,
// patternProperties, dependent*, unevaluated*, anyOf/oneOf next to
// properties or items) make only their node `unknown`; in declarations the
// note says which keyword it was.
package schemahint
