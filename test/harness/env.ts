/** Sets environment variable `name` to `value` (undefined: unset); returns what puts it back as it was. */
function setEnv(name: string, value: string | undefined): () => void {
  const before = process.env[name];
  if (value === undefined) delete process.env[name];
  else process.env[name] = value;
  return () => {
    if (before === undefined) delete process.env[name];
    else process.env[name] = before;
  };
}

/** Runs `body` with environment variable `name` set to `value` (undefined: unset), then puts it back as it was. */
export function withEnv<T>(name: string, value: string | undefined, body: () => T): T {
  const restore = setEnv(name, value);
  try {
    return body();
  } finally {
    restore();
  }
}

/** withEnv for an asynchronous `body`: the variable is put back once its promise settles. */
export async function withEnvAsync<T>(name: string, value: string | undefined, body: () => Promise<T>): Promise<T> {
  const restore = setEnv(name, value);
  try {
    return await body();
  } finally {
    restore();
  }
}
