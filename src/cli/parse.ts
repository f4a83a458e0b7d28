import { InvalidArgumentError } from 'commander';

export function parsePositiveInt(value: string, flag: string): number {
  const n = Number(value);
  if (!Number.isInteger(n) || n < 1)
    throw new InvalidArgumentError(`${flag} must be a positive integer, got '${value}'`);
  return n;
}

export function parseNonNegativeInt(value: string, flag: string): number {
  const n = Number(value);
  if (!Number.isInteger(n) || n < 0)
    throw new InvalidArgumentError(`${flag} must be a non-negative integer, got '${value}'`);
  return n;
}

/** A fraction in (0, 1], such as a utilisation. */
export function parseFraction(value: string, flag: string): number {
  const f = Number(value);
  if (!(f > 0 && f <= 1)) throw new InvalidArgumentError(`${flag} must be a number in (0, 1], got '${value}'`);
  return f;
}

/** Runs a parser from the library inside a commander option, so its message becomes commander's usage error. */
export function guard<T>(parse: () => T): T {
  try {
    return parse();
  } catch (err) {
    throw new InvalidArgumentError((err as Error).message);
  }
}

/** nccl-tests' -f: the factor between sizes of a sweep. */
export function parseStepFactor(value: string): number {
  const f = Number(value);
  if (!(f >= 1)) throw new InvalidArgumentError(`--stepfactor must be a number >= 1, got '${value}'`);
  return f;
}
