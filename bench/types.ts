// What a benchmark reports: a measurement against a baseline measured in the same run.

/** One line of `make bench`. */
export interface BenchResult {
  /** e.g. "judge overhead p50". */
  name: string;
  /** What the baseline is, e.g. "docker run --rm of the same image". */
  baselineName: string;
  baseline: number;
  value: number;
  unit: string;
  /** value / baseline (or the figure itself when the target is absolute). */
  ratio: number;
  /** Human-readable target, e.g. "ratio <= 1.3". */
  target: string;
  met: boolean;
  notes?: string;
}

/** A bench module: `bench/<area>.ts` exports `suite`. */
export interface BenchSuite {
  name: string;
  /** What the suite needs: Docker, a NATS server, the single-node cluster (it brings it up and installs the chart), kwok's simulated nodes on a control plane of its own. */
  needs: ("docker" | "nats" | "cluster" | "kwok")[];
  run(): Promise<BenchResult[]>;
}
