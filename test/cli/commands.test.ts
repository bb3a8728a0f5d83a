// bin/commands.json, the CLI's command table, is made from the admin routes' contracts
// (src/openapi/cli.ts) and committed, since bin/meterflow.js runs without a build. This fails
// when the file no longer matches the contracts; `npx tap --snapshot test/cli/commands.test.ts`
// writes it anew.
import fs from 'node:fs'
import t from 'tap'
import { cliCommands, cliType } from '../../src/openapi/cli.js'
import { startTestServer } from '../helpers/server.js'

const file = new URL('../../bin/commands.json', import.meta.url)
const s = await startTestServer()
t.teardown(() => s.close())

t.test('bin/commands.json is the one made from the route contracts', async (t) => {
  const made = JSON.stringify(cliCommands(s.app.router.list()), null, 2) + '\n'
  if (t.writeSnapshot) fs.writeFileSync(file, made)
  t.equal(
    fs.readFileSync(file, 'utf8'),
    made,
    'up to date (npx tap --snapshot test/cli/commands.test.ts writes it)',
  )
})

t.test('option types follow the field schemas', async (t) => {
  t.equal(cliType({ type: 'integer' }), 'int')
  t.equal(cliType({ anyOf: [{ type: 'integer' }, { type: 'null' }] }), 'int?')
  t.equal(cliType({ anyOf: [{ const: 'open' }, { const: 'resolved' }] }), 'string')
  t.equal(cliType({ anyOf: [{ const: 0 }, { const: 1 }] }), 'int')
  t.equal(cliType({ anyOf: [{}, { type: 'null' }] }), 'json', 'anything or null is JSON')
  t.equal(cliType({ type: 'array' }), 'list')
  t.equal(cliType({}), 'json')
})

t.test('a contract naming a field it does not have is refused', async (t) => {
  const route = (fields: string[]) => ({
    method: 'POST',
    pattern: '/admin/v1/x/:id',
    contract: {
      method: 'POST' as const,
      path: '/admin/v1/x/:id',
      summary: 'x',
      auth: 'admin' as const,
      cli: { name: 'x:y', summary: 'X.', param: 'thing', fields },
    },
  })
  t.throws(() => cliCommands([route(['nope'])]), /cli field nope is not a field/)
  t.same(cliCommands([route([])]), {
    'x:y': {
      method: 'POST',
      path: '/x/{thing}',
      summary: 'X.',
      options: { thing: { type: 'int', required: true } },
    },
  })
})
