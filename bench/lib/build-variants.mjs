// The variants a side-by-side benchmark runs in turns: this checkout and, with --against DIR,
// another built checkout, each once per value of a TSCCL_* variable given as --env NAME=v1,v2.
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';

/**
 * The command line of a side-by-side benchmark: `flag(name, fallback)` reads `--name value`, and
 * the options every one of them takes (--rounds, --tcp, --against, --env).
 */
export function sideBySideArgs(argv = process.argv.slice(2)) {
  const flag = (name, fallback) => {
    const i = argv.indexOf(name);
    return i >= 0 ? argv[i + 1] : fallback;
  };
  return {
    flag,
    rounds: Number(flag('--rounds', '3')),
    tcp: argv.includes('--tcp'),
    against: flag('--against', undefined),
    envSpec: flag('--env', undefined),
  };
}

/**
 * One variant per build and value: `name` for the tables, `root` of the build, `script` (the rank
 * script `rankScript(root)` wrote for that build), `env` to run it with. `tool` names the
 * benchmark in the error a malformed --env spec exits with.
 */
export function buildVariants({ tool, against, envSpec, rankScript }) {
  if (envSpec !== undefined && !/^TSCCL_[A-Z_]+=[^,]+(,[^,]+)*$/.test(envSpec)) {
    console.error(`${tool}: --env takes TSCCL_NAME=v1,v2,...`);
    process.exit(2);
  }
  const [envName, envValues] =
    envSpec === undefined ? [undefined, [undefined]] : [envSpec.split('=')[0], envSpec.split('=')[1].split(',')];
  const builds = [
    { name: 'this checkout', root: fileURLToPath(new URL('../..', import.meta.url)) },
    ...(against ? [{ name: against, root: resolve(against) }] : []),
  ];
  return builds.flatMap((build) => {
    const script = rankScript(build.root);
    return envValues.map((value) => ({
      ...build,
      script,
      env: value === undefined ? process.env : { ...process.env, [envName]: value },
      name: value === undefined ? build.name : `${build.name}, ${envName}=${value}`,
    }));
  });
}

/** Writes `text` to a rank script in a directory of its own, removed when this process exits. */
export function writeRankScript(prefix, text) {
  const dir = mkdtempSync(join(tmpdir(), prefix));
  process.on('exit', () => rmSync(dir, { recursive: true, force: true }));
  const file = join(dir, 'rank.mjs');
  writeFileSync(file, text);
  return file;
}
