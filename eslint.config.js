import tseslint from 'typescript-eslint'

// Layers of src/ (README "Layout"), bottom first: a folder imports only from its own layer or
// earlier ones, so imports point downstream and a reading's path can be read off the list.
const LAYERS = [
  ['domain', 'config', 'errors.js', 'clock.js', 'validate.js', 'lifecycle.js', 'thread-priority.js'],
  ['coord', 'decode'],
  ['store', 'clickhouse-server'],
  ['events'],
  ['actors'],
  ['ingest', 'query', 'webhooks', 'presets'],
  ['jobs', 'scheduler'],
  ['http'],
  ['api', 'admin', 'stream', 'mqtt', 'openapi', 'observability'],
  ['app.js', 'main.js'],
]
const isFile = (name) => name.endsWith('.js')
const layerRules = LAYERS.flatMap((layer, i) => {
  const above = LAYERS.slice(i + 1).flat()
  if (!above.length) return []
  const rule = (prefix) => ({
    patterns: [
      {
        group: above.map((x) => (isFile(x) ? `${prefix}${x}` : `${prefix}${x}/*`)),
        message: `${layer.join(', ')} may import only from its own layer or earlier ones (README "Layout"): imports point downstream.`,
      },
    ],
  })
  const folders = layer.filter((x) => !isFile(x)).map((x) => `src/${x}/**`)
  const files = layer.filter(isFile).map((x) => `src/${x.replace(/\.js$/, '.ts')}`)
  return [
    ...(folders.length ? [{ files: folders, rules: { 'no-restricted-imports': ['error', rule('../')] } }] : []),
    ...(files.length ? [{ files, rules: { 'no-restricted-imports': ['error', rule('./')] } }] : []),
  ]
})

// SQL lives in src/store/, which owns every table.
const SQL = '/\\b(SELECT\\s[\\s\\S]*\\sFROM|INSERT\\s+INTO|DELETE\\s+FROM|ALTER\\s+TABLE|CREATE\\s+TABLE)\\b/'
const noSql = (what) => [
  { selector: `Literal[value=${SQL}]`, message: `SQL belongs in src/store/ (${what}).` },
  { selector: `TemplateElement[value.raw=${SQL}]`, message: `SQL belongs in src/store/ (${what}).` },
]

export default tseslint.config(
  { ignores: ['dist/', 'node_modules/', 'asm/', 'data/', '.tap/'] },
  ...tseslint.configs.recommended,
  {
    rules: {
      '@typescript-eslint/no-explicit-any': 'off',
      '@typescript-eslint/no-unused-vars': ['error', { argsIgnorePattern: '^_' }],
      'no-restricted-properties': [
        'error',
        { object: 'process', property: 'env', message: 'Read configuration in src/config only.' },
      ],
    },
  },
  { files: ['src/config/**', 'test/**', 'bench/**', 'bin/**'], rules: { 'no-restricted-properties': 'off' } },
  ...layerRules,
  {
    files: ['src/**/*.ts'],
    ignores: ['src/store/**'],
    rules: { 'no-restricted-syntax': ['error', ...noSql('it owns every table')] },
  },
)
