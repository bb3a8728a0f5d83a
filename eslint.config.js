import tseslint from 'typescript-eslint'

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
)
