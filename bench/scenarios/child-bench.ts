// Runs another bench module's entry function in a child process (its own CPU, memory and
// chDB instance), for the query and decoder benches that others maintain:
//   node --import tsx bench/scenarios/child-bench.ts <module path> <export name> <quick 0|1>
import { pathToFileURL } from 'node:url'
import path from 'node:path'

const [file, fn, quick] = process.argv.slice(2)
const mod = (await import(pathToFileURL(path.resolve(file!)).href)) as Record<
  string,
  (o: { quick: boolean }) => Promise<object>
>
const log = console.log
console.log = (...a: unknown[]) => process.stderr.write(a.join(' ') + '\n') // keep stdout for the result
const out = await mod[fn!]!({ quick: quick === '1' })
log('\n@@RESULT@@' + JSON.stringify(out))
process.exit(0)
