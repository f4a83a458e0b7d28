import { fileURLToPath } from 'node:url';
import { defineConfig } from 'vite';

// The page is built with the package and shipped in it (dist/ui): `tsccl ui` serves it and
// inlines it into `--out` reports, so it needs no network at run time.
export default defineConfig({
  root: fileURLToPath(new URL('.', import.meta.url)),
  base: './',
  logLevel: 'warn',
  build: {
    outDir: fileURLToPath(new URL('../dist/ui', import.meta.url)),
    emptyOutDir: true,
    modulePreload: false,
    chunkSizeWarningLimit: 2048,
  },
  oxc: { jsx: { runtime: 'automatic', importSource: 'preact' } },
});
