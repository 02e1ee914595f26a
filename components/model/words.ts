/** Nearest words, for "did you mean" hints in messages. Pure. */

/**
 * Edits (insert, delete, substitute, swap two neighbours) that turn `a` into `b`, ignoring case:
 * `rke2-remediaton` is one edit from `rke2-remediation`, `nodelocal` none from `nodeLocal`.
 */
export function editDistance(a: string, b: string): number {
  const x = a.toLowerCase();
  const y = b.toLowerCase();
  const d: number[][] = Array.from({ length: x.length + 1 }, (_, i) =>
    Array.from({ length: y.length + 1 }, (_, j) => (i === 0 ? j : j === 0 ? i : 0)),
  );
  for (let i = 1; i <= x.length; i++) {
    for (let j = 1; j <= y.length; j++) {
      const cost = x[i - 1] === y[j - 1] ? 0 : 1;
      d[i][j] = Math.min(d[i - 1][j] + 1, d[i][j - 1] + 1, d[i - 1][j - 1] + cost);
      if (i > 1 && j > 1 && x[i - 1] === y[j - 2] && x[i - 2] === y[j - 1]) {
        d[i][j] = Math.min(d[i][j], d[i - 2][j - 2] + 1);
      }
    }
  }
  return d[x.length][y.length];
}

/** The candidate nearest to `word` by editDistance; the first listed wins a tie. */
export function closest(word: string, candidates: readonly string[]): string | undefined {
  let best: { candidate: string; distance: number } | undefined;
  for (const candidate of candidates) {
    const distance = editDistance(word, candidate);
    if (!best || distance < best.distance) best = { candidate, distance };
  }
  return best?.candidate;
}
