// The time scale: how many times faster than the real service a clock runs, one meaning for the
// emulator (its latencies and windows), the throttle's windows and the waits that follow the
// service's pace. 60 makes a minute last a second. Earlier releases read the emulator's scale the
// other way round (0.1 for ten times faster): such a value is refused with the one meant now.

/** The fastest pace offered: an hour in a second. */
export const MAX_TIME_SCALE = 3600;

/** A number as a person writes it: 10, 3.3333, not 3.3333333333333335. */
const plain = (n: number) => String(Number(n.toPrecision(5)));

/**
 * Why a time scale is refused, to follow the setting's name ("--time-scale now means times
 * faster: use 10 instead of 0.1"), or undefined for one from 1 to MAX_TIME_SCALE.
 */
export function timeScaleProblem(value: number): string | undefined {
  if (!Number.isFinite(value)) return 'must be a number (times faster than the service)';
  if (value > 0 && value < 1)
    return `now means times faster: use ${plain(1 / value)} instead of ${value}`;
  if (value < 1) return `must be from 1 to ${MAX_TIME_SCALE} (times faster than the service)`;
  if (value > MAX_TIME_SCALE) return `must be at most ${MAX_TIME_SCALE} (an hour in a second)`;
  return undefined;
}

/** What a process on another pace needs to share it: PCDS_TIME_SCALE when the clock runs faster. */
export const timeScaleEnv = (timeScale: number): Record<string, string> =>
  timeScale === 1 ? {} : { PCDS_TIME_SCALE: String(timeScale) };
