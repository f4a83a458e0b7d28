/** Runs `body` with environment variable `name` set to `value` (undefined: unset), then puts it back as it was. */
export function withEnv<T>(name: string, value: string | undefined, body: () => T): T {
  const before = process.env[name];
  if (value === undefined) delete process.env[name];
  else process.env[name] = value;
  try {
    return body();
  } finally {
    if (before === undefined) delete process.env[name];
    else process.env[name] = before;
  }
}

/** withEnv for an asynchronous `body`: the variable is put back once its promise settles. */
export async function withEnvAsync<T>(name: string, value: string | undefined, body: () => Promise<T>): Promise<T> {
  const before = process.env[name];
  if (value === undefined) delete process.env[name];
  else process.env[name] = value;
  try {
    return await body();
  } finally {
    if (before === undefined) delete process.env[name];
    else process.env[name] = before;
  }
}
