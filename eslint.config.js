import tseslint from 'typescript-eslint'

// Layers of src/ (README "Layout"): a folder imports only from its own layer or earlier ones.
// Enforced so far for the two bottom layers; the rest of the order is issue 12's work.
const ABOVE_STORE = [
  'actors',
  'ingest',
  'query',
  'webhooks',
  'events',
  'jobs',
  'scheduler',
  'http',
  'api',
  'admin',
  'stream',
  'openapi',
  'observability',
  'mqtt',
  'presets',
]
const upward = (folders, layer) => ({
  patterns: [
    {
      group: [...folders.map((f) => `../${f}/*`), '../services.js', '../stages.js', '../app.js', '../main.js'],
      message: `${layer} imports only from its own layer or earlier ones (imports point downstream).`,
    },
  ],
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
  {
    files: ['src/domain/**'],
    rules: {
      'no-restricted-imports': ['error', upward([...ABOVE_STORE, 'store', 'coord', 'decode', 'config'], 'src/domain')],
    },
  },
  { files: ['src/store/**'], rules: { 'no-restricted-imports': ['error', upward(ABOVE_STORE, 'src/store')] } },
  {
    files: ['src/**/*.ts'],
    ignores: [
      'src/store/**',
      // Starts ClickHouse's HTTP listener; no table.
      'src/clickhouse-server/**',
    ],
    rules: { 'no-restricted-syntax': ['error', ...noSql('it owns every table')] },
  },
)
