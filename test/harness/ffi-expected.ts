/**
 * Where koffi has a prebuilt binary and its recv/send must load (Linux on x64 or arm64 with
 * glibc): there a test asserts the FFI path is the one in use; elsewhere node:fs's calls serve.
 */
export const ffiExpected =
  process.platform === 'linux' &&
  ['x64', 'arm64'].includes(process.arch) &&
  (process.report.getReport() as { header: { glibcVersionRuntime?: string } }).header.glibcVersionRuntime !== undefined;
