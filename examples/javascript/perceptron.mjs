// An outside implementation of perceptron-oracle's Perceptron (SPEC.md section 11) and of
// HO_p(c) and the p-norm Perceptron with the linear kernel (section 12), in plain JavaScript
// with float64 numbers, checked against the golden files:
//
//   node examples/javascript/perceptron.mjs perceptron_oracle/conformance_data OUT_DIR
//   perceptron-oracle verify --results OUT_DIR --algorithm perceptron \
//       --algorithm higher_order --algorithm pnorm_perceptron --kernel linear
//
// It reads every case file the manifest lists, runs each case it implements and writes one
// trace per case to OUT_DIR/<file>-<id>.json. It only needs the format documented in
// perceptron_oracle/conformance_data/README.md: nothing here is generated from the Python code.
import { readFileSync, writeFileSync, mkdirSync } from "node:fs";
import { join } from "node:path";

const [goldenDir, outDir] = process.argv.slice(2);
if (!goldenDir || !outDir) {
  console.error("usage: node perceptron.mjs GOLDEN_DIR OUT_DIR");
  process.exit(2);
}

// "p/q" or "p" -> the nearest double (parameters only; the data X are decimal strings).
const rational = (s) => {
  if (s === null || s === undefined) return s;
  const [p, q] = String(s).split("/");
  return q === undefined ? Number(p) : Number(p) / Number(q);
};

function kernelOf(spec) {
  const [name, rest = ""] = spec.split(":");
  const opts = Object.fromEntries(rest.split(",").filter(Boolean).map((kv) => {
    const [k, v] = kv.split("=");
    return [k, rational(v)];
  }));
  const dot = (a, b) => a.reduce((s, v, i) => s + v * b[i], 0);
  if (name === "linear") return dot;
  if (name === "poly") return (a, b) => (opts.gamma * dot(a, b) + opts.coef0) ** opts.degree;
  if (name === "rbf") {
    return (a, b) => Math.exp(-opts.gamma * a.reduce((s, v, i) => s + (v - b[i]) ** 2, 0));
  }
  throw new Error(`unknown kernel ${spec}`);
}

// The general Perceptron in dual form: alpha[j] counts the updates example j caused.
// Votes as in Khardon & Wachman's Figure 2: the hypothesis in force votes on a trial with
// y score > tau; a trial the alpha-bound blocks neither updates nor votes.
function perceptron(X, y, epochs, kernelSpec, params) {
  const k = kernelOf(kernelSpec);
  const eta = rational(params.eta), b0 = rational(params.b0), C = rational(params.C);
  const tau = rational(params.tau), lam = rational(params.lam);
  const bound = params.alpha_bound;
  const T = X.length;
  const gram = X.map((a) => X.map((b) => k(a, b)));
  const alpha = new Array(T).fill(0);
  const support = [];
  let b = b0;
  const mistakes = [], updates = [], votes = [0];
  const snapshots = [alpha.slice()];          // alpha of every hypothesis h_0 .. h_K
  for (let t = 0; t < epochs * T; t++) {
    const j = t % T;
    let score = b;
    for (const i of support) score += eta * alpha[i] * y[i] * gram[i][j];
    if (lam && alpha[j] > 0) score += y[j] * lam * gram[j][j];
    const margin = y[j] * score;
    if (margin <= 0) mistakes.push(t);        // a zero score is a mistake
    if (margin <= tau && (bound === null || alpha[j] < bound)) {
      updates.push(t);
      if (alpha[j] === 0) support.push(j);
      alpha[j] += 1;
      b += eta * y[j] * C;
      votes.push(0);
      snapshots.push(alpha.slice());
    } else if (margin > tau) {
      votes[votes.length - 1] += 1;
    }
  }
  const linear = kernelSpec === "linear";
  const hypothesis = (a, weight) => {
    const state = { b: weight * b0 + eta * C * a.reduce((s, v, i) => s + v * y[i], 0),
                    alpha: a };
    if (linear) {
      state.w = X[0].map((_, f) => eta * a.reduce((s, v, i) => s + v * y[i] * X[i][f], 0));
    }
    return state;
  };
  const best = votes.indexOf(Math.max(...votes));  // the earliest on a tie
  const total = votes.reduce((s, v) => s + v, 0);
  const averaged = alpha.map((_, i) => snapshots.reduce((s, a, h) => s + votes[h] * a[i], 0));
  const final = { ...hypothesis(alpha, 1), b, votes,
                  longest_survivor: { index: best, vote: votes[best],
                                      ...hypothesis(snapshots[best], 1) },
                  averaged: { total_votes: total, ...hypothesis(averaged, total) } };
  return { mistakes, updates, final };
}

// HO_p(c), Figure 1 of Brotto, Gentile & Vitale with B kept explicitly (n x n, B_0 = I):
// score = w.x with w = B^T g(B v), g the gradient of ||.||_p^2 / 2 (the identity for p = 2);
// on a mistake (the k-th), rho_k by the rule, v += y x and B = B (I - rho_k x g(x)^T).
function higherOrder(X, y, epochs, params) {
  const p = rational(params.p), c = rational(params.c ?? "0");
  const n = X[0].length, T = X.length;
  const dot = (a, b) => a.reduce((s, v, i) => s + v * b[i], 0);
  const g = (theta) => {
    if (p === 2) return theta.slice();
    const norm = theta.reduce((s, v) => s + Math.abs(v) ** p, 0) ** (1 / p);
    if (norm === 0) return theta.map(() => 0);
    return theta.map((v) => Math.sign(v) * Math.abs(v) ** (p - 1) / norm ** (p - 2));
  };
  const B = X[0].map((_, i) => X[0].map((_, j) => (i === j ? 1 : 0)));
  const times = (M, z) => M.map((row) => dot(row, z));              // M z
  const transposeTimes = (M, z) => z.map((_, j) => M.reduce((s, row, i) => s + row[j] * z[i], 0));
  const v = new Array(n).fill(0), rhos = [], mistakes = [];
  const weights = () => transposeTimes(B, g(times(B, v)));
  for (let t = 0; t < epochs * T; t++) {
    const x = X[t % T], label = y[t % T];
    if (label * dot(weights(), x) > 0) continue;                    // a zero score is a mistake
    mistakes.push(t);
    const s = dot(v, x), k = mistakes.length;
    let rho = { "c/k": c / k, theorem1: (1 - c) / (1 + Math.abs(s)), constant: c }[params.rho];
    if (params.sparse && label * s < 0) rho = 0;
    rhos.push(rho);
    x.forEach((xi, i) => { v[i] += label * xi; });
    if (rho !== 0) {                                                 // B -= rho (B x) g(x)^T
      const Bx = times(B, x), gx = g(x);
      B.forEach((row, i) => row.forEach((_, j) => { row[j] -= rho * Bx[i] * gx[j]; }));
    }
  }
  return { mistakes, updates: mistakes, final: { w: weights(), v: v.slice(), rho: rhos } };
}

function run(algorithm, X, y, epochs, kernel, params) {
  if (algorithm === "perceptron") return ["dual", perceptron(X, y, epochs, kernel, params)];
  if (kernel !== "linear") return [null, null];
  if (algorithm === "higher_order") return ["primal", higherOrder(X, y, epochs, params)];
  if (algorithm === "pnorm_perceptron") {                            // HO_p(0): B = I
    const ho = higherOrder(X, y, epochs, { ...params, c: "0", rho: "constant" });
    return ["primal", { ...ho, final: { w: ho.final.w, v: ho.final.v } }];
  }
  return [null, null];
}

mkdirSync(outDir, { recursive: true });
const manifest = JSON.parse(readFileSync(join(goldenDir, "manifest.json"), "utf8"));
let written = 0;
for (const entry of manifest.files) {
  const doc = JSON.parse(readFileSync(join(goldenDir, entry.path), "utf8"));
  const stem = entry.path.replace(/\.json$/, "");
  for (const group of doc.groups) {
    for (const c of group.cases) {
      const X = c.X.map((row) => row.map(Number));  // shortest round-trip decimals
      const [form, result] = run(group.algorithm, X, c.y, c.epochs, group.kernel, group.params);
      if (!result) continue;                           // not implemented here
      const trace = { format: "perceptron-oracle/trace@1", algorithm: group.algorithm,
                      form, kernel: group.kernel, params: group.params,
                      n_examples: X.length, epochs: c.epochs, ...result };
      writeFileSync(join(outDir, `${stem}-${c.id}.json`), JSON.stringify(trace));
      written += 1;
    }
  }
}
console.log(`wrote ${written} traces to ${outDir}`);
