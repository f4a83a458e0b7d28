import { open, readFile, rename } from 'node:fs/promises';
import { invalidArgument } from '../errors.js';

/** One tensor of a checkpoint: what it is (a parameter, an optimizer's state, a ZeRO master block), its place in its list, and its values. */
export interface CheckpointEntry {
  readonly kind: 'param' | 'optimizer' | 'master';
  readonly index: number;
  readonly name: string;
  readonly shape: readonly number[];
  readonly values: Float32Array;
}

export interface Checkpoint {
  /** The step training resumes at. */
  readonly step: number;
  readonly entries: readonly CheckpointEntry[];
}

const MAGIC = 'tsccl-checkpoint\n';
const VERSION = 1;

interface HeaderEntry {
  kind: CheckpointEntry['kind'];
  index: number;
  name: string;
  shape: number[];
  dtype: 'float32';
  byteOffset: number;
  byteLength: number;
}

/**
 * Writes a checkpoint: the magic line, a little-endian uint32 with the JSON header's length,
 * the header ({ version, step, entries: [{ kind, index, name, shape, dtype, byteOffset,
 * byteLength }] }, offsets from the payload's start), then the payload. Written to a
 * temporary name and renamed, so a reader never sees half a file.
 */
export async function writeCheckpoint(path: string, checkpoint: Checkpoint): Promise<void> {
  let byteOffset = 0;
  const entries: HeaderEntry[] = checkpoint.entries.map((e) => {
    const entry: HeaderEntry = {
      kind: e.kind,
      index: e.index,
      name: e.name,
      shape: [...e.shape],
      dtype: 'float32',
      byteOffset,
      byteLength: e.values.byteLength,
    };
    byteOffset += e.values.byteLength;
    return entry;
  });
  const header = Buffer.from(JSON.stringify({ version: VERSION, step: checkpoint.step, entries }));
  const length = Buffer.alloc(4);
  length.writeUInt32LE(header.length);
  const temporary = `${path}.${process.pid}.partial`;
  const file = await open(temporary, 'w');
  try {
    await file.write(Buffer.from(MAGIC));
    await file.write(length);
    await file.write(header);
    for (const e of checkpoint.entries)
      await file.write(new Uint8Array(e.values.buffer, e.values.byteOffset, e.values.byteLength));
    await file.sync();
  } finally {
    await file.close();
  }
  await rename(temporary, path);
}

/** Reads a checkpoint `writeCheckpoint` wrote; anything else is refused with TSCCL_ERR_INVALID_ARGUMENT naming what is wrong. */
export async function readCheckpoint(path: string): Promise<Checkpoint> {
  const bytes = await readFile(path);
  const bad = (what: string) => invalidArgument(`${path} is not a tsccl checkpoint: ${what}`, { argument: 'path' });
  if (bytes.subarray(0, MAGIC.length).toString() !== MAGIC) throw bad('no tsccl-checkpoint line at its start');
  if (bytes.length < MAGIC.length + 4) throw bad('it ends before its header');
  const headerLength = bytes.readUInt32LE(MAGIC.length);
  const payloadStart = MAGIC.length + 4 + headerLength;
  if (payloadStart > bytes.length) throw bad('it ends inside its header');
  let header: { version?: unknown; step?: unknown; entries?: unknown };
  try {
    header = JSON.parse(bytes.subarray(MAGIC.length + 4, payloadStart).toString());
  } catch {
    throw bad('its header is not JSON');
  }
  if (header.version !== VERSION) throw bad(`version ${String(header.version)}, this build reads ${VERSION}`);
  if (!Number.isInteger(header.step) || !Array.isArray(header.entries)) throw bad('its header has no step or entries');
  const entries = (header.entries as HeaderEntry[]).map((e, i) => {
    const end = payloadStart + e.byteOffset + e.byteLength;
    const count = (e.shape ?? []).reduce((a, b) => a * b, 1);
    if (e.dtype !== 'float32' || !Number.isInteger(e.byteOffset) || e.byteLength !== count * 4 || end > bytes.length) {
      throw bad(`entry ${i} (${e.name}) does not fit its file`);
    }
    const values = new Float32Array(count);
    new Uint8Array(values.buffer).set(bytes.subarray(payloadStart + e.byteOffset, end));
    return { kind: e.kind, index: e.index, name: e.name, shape: e.shape, values };
  });
  return { step: header.step as number, entries };
}
