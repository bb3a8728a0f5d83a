// Compiles the AssemblyScript decoder (asm/*.ts) to asm/build/decoder.wasm with
// the installed assemblyscript compiler, and copies the module next to the
// compiled TypeScript (dist/decode/decoder.wasm) so `dist/` works on its own.
import asc from "assemblyscript/asc";
import { mkdirSync, copyFileSync, existsSync, statSync, writeFileSync, readFileSync } from "node:fs";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { generateLayout, statePath, generatedPath } from "./gen-layout.mjs";

const here = dirname(fileURLToPath(import.meta.url));
const out = join(here, "build", "decoder.wasm");
mkdirSync(join(here, "build"), { recursive: true });

// The host's copy of the decoder's numbers, from the same source (asm/gen-layout.mjs).
writeFileSync(generatedPath, generateLayout(readFileSync(statePath, "utf8")));

const { error, stdout, stderr } = await asc.main(
  [
    join(here, "index.ts"),
    "--outFile", out,
    "--textFile", join(here, "build", "decoder.wat"),
    "-O3",
    "--runtime", "stub",
    "--noAssert",
    "--baseDir", here,
  ],
  {},
);
if (error) {
  console.error(stderr.toString());
  console.error("asm build failed:", error.message);
  process.exit(1);
}
const so = stdout.toString();
if (so) console.log(so);
// The same sources as plain JavaScript (AssemblyScript portable mode), for the
// WASM-vs-JS comparison in bench/decode. Needs the portable shims loaded first
// (import "assemblyscript/std/portable/index.js").
try {
  const esbuild = await import("esbuild");
  await esbuild.build({
    entryPoints: [join(here, "portable.ts")],
    bundle: true,
    format: "esm",
    platform: "neutral",
    outfile: join(here, "build", "portable.mjs"),
    logLevel: "warning",
  });
} catch (err) {
  console.warn("asm: portable JS build skipped:", err.message);
}
const distDir = join(here, "..", "dist", "decode");
mkdirSync(distDir, { recursive: true });
copyFileSync(out, join(distDir, "decoder.wasm"));
if (!existsSync(out)) process.exit(1);
console.log(`asm: built ${out} (${statSync(out).size} bytes), copied to dist/decode/decoder.wasm`);
