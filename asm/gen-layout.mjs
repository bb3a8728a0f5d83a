// Writes src/decode/state.generated.ts from asm/state.ts: the slot, record-field, data-type,
// outcome and reason numbers the host reads out of the decoder's memory. One source, so the
// TypeScript side cannot drift from the WASM side (it used to be a hand-kept copy).
// Run by asm/build.mjs; test/decode/layout.test.ts fails when the committed file is stale.
import { readFileSync, writeFileSync } from "node:fs";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";

const here = dirname(fileURLToPath(import.meta.url));
export const statePath = join(here, "state.ts");
export const generatedPath = join(here, "..", "src", "decode", "state.generated.ts");

// Section comments of asm/state.ts -> the object each section's constants go into.
const SECTIONS = [
  [/^\/\/ CTRL slots/, "S", "S_", "Slots of the decoder's CTRL array (Int32)."],
  [/^\/\/ record fields/, "R", "R_", "Fields of a record in the REC array (REC_W doubles per record)."],
  [/^\/\/ data types of records/, "D", "D_", "Data types of records (R.DTYPE)."],
  [/^\/\/ outcome codes/, "RC", "R_", "Outcome codes of begin()/resume()."],
  [/^\/\/ reason constants/, "E", "E_", "Reason codes (CTRL[S.REASON]); texts in layout.ts REASONS."],
];

/** The generated module's text for the given asm/state.ts source. */
export function generateLayout(source) {
  const groups = new Map();
  let current = null;
  let recW = null;
  for (const line of source.split("\n")) {
    const section = SECTIONS.find(([re]) => re.test(line));
    if (section) {
      current = section;
      groups.set(section[1], []);
      continue;
    }
    const m = /^export const ([A-Z][A-Z0-9_]*): i32 = (-?\d+);\s*(?:\/\/\s*(.*))?$/.exec(line);
    if (!m) continue;
    if (m[1] === "REC_W") recW = m[2];
    if (!current || !m[1].startsWith(current[2])) continue;
    groups.get(current[1]).push({ name: m[1].slice(current[2].length), value: m[2], note: m[3] });
  }
  if (recW === null) throw new Error("asm/state.ts: REC_W not found");
  const out = [
    "// Generated from asm/state.ts by asm/gen-layout.mjs (npm run build:asm). Do not edit.",
    "",
    `export const REC_W = ${recW}`,
  ];
  for (const [, name, , doc] of SECTIONS) {
    const entries = groups.get(name);
    if (!entries?.length) throw new Error(`asm/state.ts: no constants for ${name}`);
    out.push("", `/** ${doc} */`, `export const ${name} = {`);
    for (const e of entries) {
      if (e.note) out.push(`  /** ${e.note.replace(/\*\//g, "* /")} */`);
      out.push(`  ${e.name}: ${e.value},`);
    }
    out.push("} as const");
  }
  return out.join("\n") + "\n";
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  writeFileSync(generatedPath, generateLayout(readFileSync(statePath, "utf8")));
  console.log(`asm: wrote ${generatedPath}`);
}
