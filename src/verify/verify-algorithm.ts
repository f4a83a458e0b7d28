import { buildSchedule } from '../algorithms/registry.js';
import type { CallShape } from '../algorithms/schedule.js';
import { type VerifyResult, verifySchedules } from './verifier.js';

/** Builds every rank's schedule for one call shape and verifies them together. */
export function verifyAlgorithm(
  shape: CallShape,
  algorithm: string,
  perRank?: (rank: number) => Partial<CallShape>,
): VerifyResult {
  const shapes = Array.from({ length: shape.nranks }, (_, r) => ({ ...shape, ...perRank?.(r) }));
  const schedules = shapes.map((s, r) => buildSchedule(s, r, algorithm));
  return verifySchedules(shapes, schedules);
}
