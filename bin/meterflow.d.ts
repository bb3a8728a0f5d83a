// Types of what bin/meterflow.js exports, for tests written in TypeScript.
export interface OptionSpec {
  type: string
  required?: boolean
  field?: string
}
export interface CommandSpec {
  method: string
  path: string
  summary: string
  options?: Record<string, OptionSpec>
}
export const COMMANDS: Record<string, CommandSpec>
export function parseArgs(argv: string[]): {
  opts: Record<string, string | true>
  positional: string[]
}
export function buildRequest(
  name: string,
  cmd: CommandSpec,
  opts: Record<string, string | true>,
): { method: string; path: string; body: string | Buffer | undefined; contentType: string }
export function human(value: unknown): string
export function main(argv?: string[], env?: Record<string, string | undefined>): Promise<number>
