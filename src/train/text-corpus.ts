import { invalidArgument } from '../errors.js';
import { seededRandom } from '../seeded-random.js';

/** A batch of token ids: `rows` sequences of `seqLen` inputs and, for each, the token that follows it. */
export interface TokenBatch {
  readonly inputs: Int32Array;
  readonly targets: Int32Array;
  readonly rows: number;
  readonly seqLen: number;
}

export interface BatchOptions {
  /** Sequences in the global batch, over all ranks. */
  batchSize: number;
  seqLen: number;
  /** This rank's share is rows [rank * batchSize / ranks, (rank + 1) * batchSize / ranks). */
  rank?: number;
  ranks?: number;
  seed?: number;
}

const SUBJECTS = ['the cat', 'a dog', 'the old man', 'my sister', 'the bird', 'a child', 'the farmer', 'our teacher'];
const VERBS = ['sees', 'finds', 'likes', 'carries', 'watches', 'paints', 'follows', 'hears'];
const OBJECTS = ['the red ball', 'a small house', 'the river', 'an apple', 'the moon', 'a green hat', 'the road'];
const ENDINGS = ['.', ' today.', ' at night.', ' in the garden.', ' again.'];

/**
 * Text from a small grammar (subject, verb, object, ending), generated from a seed: a corpus
 * with structure to learn and nothing to download.
 */
export function generateText(characters: number, seed = 0): string {
  const next = seededRandom(seed);
  const pick = (words: readonly string[]) => words[Math.floor(next() * words.length)];
  const parts: string[] = [];
  let length = 0;
  while (length < characters) {
    const sentence = `${pick(SUBJECTS)} ${pick(VERBS)} ${pick(OBJECTS)}${pick(ENDINGS)} `;
    parts.push(sentence);
    length += sentence.length;
  }
  return parts.join('').slice(0, characters);
}

/** A character-level corpus: its vocabulary, and batches of next-character prediction. */
export class TextCorpus {
  readonly vocabulary: readonly string[];
  readonly tokens: Int32Array;

  constructor(text: string) {
    this.vocabulary = [...new Set(text)].sort();
    const index = new Map(this.vocabulary.map((c, i) => [c, i]));
    this.tokens = Int32Array.from(text, (c) => index.get(c) as number);
  }

  get vocabSize(): number {
    return this.vocabulary.length;
  }

  decode(ids: ArrayLike<number>): string {
    return Array.from(ids, (id) => this.vocabulary[id]).join('');
  }

  /** This rank's share of the global batch of `step`: every rank draws the same global batch. */
  batch(step: number, options: BatchOptions): TokenBatch {
    const { batchSize, seqLen, rank = 0, ranks = 1, seed = 0 } = options;
    if (!Number.isInteger(ranks) || ranks < 1 || !Number.isInteger(rank) || rank < 0 || rank >= ranks) {
      throw invalidArgument(`TextCorpus.batch: rank must be in [0, ranks), got rank ${rank} of ${ranks}`, {
        argument: 'rank',
      });
    }
    if (!Number.isInteger(batchSize) || batchSize < 1 || batchSize % ranks !== 0) {
      throw invalidArgument(
        `TextCorpus.batch: batchSize must be a positive multiple of ranks (${ranks}), got ${batchSize}`,
        {
          argument: 'batchSize',
        },
      );
    }
    if (!Number.isInteger(seqLen) || seqLen < 1 || seqLen >= this.tokens.length) {
      throw invalidArgument(`TextCorpus.batch: seqLen must be in [1, ${this.tokens.length}), got ${seqLen}`, {
        argument: 'seqLen',
      });
    }
    const rows = batchSize / ranks;
    const next = seededRandom((seed * 1_000_003 + step) >>> 0);
    const starts = Array.from({ length: batchSize }, () => Math.floor(next() * (this.tokens.length - seqLen)));
    const inputs = new Int32Array(rows * seqLen);
    const targets = new Int32Array(rows * seqLen);
    for (let r = 0; r < rows; r++) {
      const start = starts[rank * rows + r];
      inputs.set(this.tokens.subarray(start, start + seqLen), r * seqLen);
      targets.set(this.tokens.subarray(start + 1, start + 1 + seqLen), r * seqLen);
    }
    return { inputs, targets, rows, seqLen };
  }
}
