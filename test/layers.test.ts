import assert from 'node:assert/strict';
import { readFileSync, readdirSync, statSync } from 'node:fs';
import { dirname, join, relative, resolve, sep } from 'node:path';
import { test } from 'node:test';
import { fileURLToPath } from 'node:url';

// The layering the design states (algorithms/ pure; comm/ over tuner/, sim/, exec/, transport/), checked on the source (as Deno std's
// check_circular_package_dependencies does): a module is a folder under src/ or a file directly
// in it. TSCCL_LAYERS_SRC points the check at another tree.
const SRC = resolve(process.env.TSCCL_LAYERS_SRC ?? fileURLToPath(new URL('../../src', import.meta.url)));

/** comm/ and what stands on it: nothing else may import these. A new module above comm belongs here. */
const ABOVE_COMM = new Set(['comm', 'progress', 'train', 'launch', 'bench', 'tune', 'cli', 'index']);
/** Schedules are plain data shared by the executor, the simulator and the verifier: no I/O, transports or timers behind them. */
const ALGORITHMS_MAY_NOT_IMPORT = new Set([
  'transport',
  'comm',
  'exec',
  'sim',
  'tuner',
  'store',
  'memory',
  'kernels',
  'launch',
  'bench',
  'tune',
  'cli',
  'index',
]);

interface Edge {
  readonly from: string;
  readonly to: string;
  readonly files: string[];
}

function sourceFiles(dir: string): string[] {
  return readdirSync(dir).flatMap((name) => {
    const path = join(dir, name);
    if (statSync(path).isDirectory()) return sourceFiles(path);
    return name.endsWith('.ts') && !name.endsWith('.d.ts') ? [path] : [];
  });
}

const moduleOf = (path: string) => relative(SRC, path).split(sep)[0].replace(/\.ts$/, '');

/** Static imports, re-exports, side-effect imports and literal dynamic imports, type-only ones included. */
const SPECIFIER = /(?:^|\n)\s*(?:(?:import|export)\s[^'"]*?from\s*|import\s*\(\s*|import\s+)(['"])(\.[^'"]+)\1/g;

function moduleGraph(): Map<string, Map<string, Edge>> {
  const graph = new Map<string, Map<string, Edge>>();
  for (const file of sourceFiles(SRC)) {
    const from = moduleOf(file);
    if (!graph.has(from)) graph.set(from, new Map());
    for (const match of readFileSync(file, 'utf8').matchAll(SPECIFIER)) {
      const target = resolve(dirname(file), match[2].replace(/\.js$/, '.ts'));
      if (!target.startsWith(SRC + sep)) continue;
      const to = moduleOf(target);
      if (to === from) continue;
      const edges = graph.get(from)!;
      if (!edges.has(to)) edges.set(to, { from, to, files: [] });
      edges.get(to)!.files.push(relative(SRC, file));
    }
  }
  return graph;
}

/** Strongly connected components of more than one module (Tarjan). */
function cycles(graph: Map<string, Map<string, Edge>>): string[][] {
  let next = 0;
  const index = new Map<string, number>();
  const low = new Map<string, number>();
  const stack: string[] = [];
  const found: string[][] = [];
  const visit = (v: string) => {
    index.set(v, next);
    low.set(v, next++);
    stack.push(v);
    for (const w of graph.get(v)?.keys() ?? []) {
      if (!index.has(w)) {
        visit(w);
        low.set(v, Math.min(low.get(v)!, low.get(w)!));
      } else if (stack.includes(w)) low.set(v, Math.min(low.get(v)!, index.get(w)!));
    }
    if (low.get(v) === index.get(v)) {
      const component: string[] = [];
      let w: string;
      do {
        w = stack.pop()!;
        component.push(w);
      } while (w !== v);
      if (component.length > 1) found.push(component.sort());
    }
  };
  for (const v of graph.keys()) if (!index.has(v)) visit(v);
  return found;
}

const describe = (edge: Edge) => `${edge.from} -> ${edge.to} (${[...new Set(edge.files)].join(', ')})`;
const allEdges = (graph: Map<string, Map<string, Edge>>) => [...graph.values()].flatMap((edges) => [...edges.values()]);

test('top-level modules of src/ import each other without cycles', () => {
  const graph = moduleGraph();
  const report = cycles(graph).map((component) => {
    const inside = allEdges(graph).filter((e) => component.includes(e.from) && component.includes(e.to));
    return `${component.join(' <-> ')}:\n  ${inside.map(describe).join('\n  ')}`;
  });
  assert.deepEqual(report, [], `import cycles between modules:\n${report.join('\n')}`);
});

test('nothing below comm/ imports comm/ or anything above it', () => {
  const upward = allEdges(moduleGraph()).filter((e) => !ABOVE_COMM.has(e.from) && ABOVE_COMM.has(e.to));
  assert.deepEqual(
    upward.map(describe),
    [],
    'a module below comm/ imports one at or above it (if the importer belongs above comm, add it to ABOVE_COMM)',
  );
});

test('algorithms/ imports nothing with side effects', () => {
  const graph = moduleGraph();
  const impure = [...(graph.get('algorithms')?.values() ?? [])].filter((e) => ALGORITHMS_MAY_NOT_IMPORT.has(e.to));
  assert.deepEqual(impure.map(describe), []);
});

test('the check reads the import forms the source uses', () => {
  const graph = moduleGraph();
  // A re-export, a type-only import and a multi-line import are all edges.
  assert.ok(graph.get('index')?.has('comm'));
  assert.ok(graph.get('sim')?.has('topology'));
  assert.ok(graph.get('comm')?.has('tuner'));
});
