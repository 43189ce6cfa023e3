"""Output perturbation's release: the noise-free descent, then the noise once.

The plan is made from public quantities in :mod:`._accounting` before any row is
read; here the rows are clipped, the descent runs on the training loop (backend
:class:`NoiseFreeDescent`) and the planned noise is added to the final weights.
"""

import numpy as np
import scipy.sparse as sp

from ..._backends import compute_row_norms, blas_controller
from ..._training import LOSSES, loss_code, loss_derivative, TrainingPlan, run_training
from ..._utils import check_positive_int
from ._accounting import plan_output_perturbation, required_bounds
from ._lattice import plan_on_lattice, release_on_lattice

__all__ = [
    "NoiseFreeDescent", "add_output_noise", "fixed_batches", "refuse_sparse",
    "release_output_perturbation", "row_scales", "train_output_perturbation",
]


def fixed_batches(rng, n_samples, batch_size):
    """One random permutation cut into ``m = floor(n / b)`` batches of exactly ``b`` rows.

    The last ``n - m b`` rows of the permutation are left out (Lemma 2 of Chen, Lee and
    Kifer divides by ``|B|``). Returns an int64 array of shape (m, b).
    """
    n_batches = n_samples // batch_size
    order = rng.permutation(n_samples)
    return order[:n_batches * batch_size].reshape(n_batches, batch_size).astype(np.int64)


def row_scales(X, row_norm_bound):
    """Factors that clip every row to ``row_norm_bound`` (1 for shorter rows)."""
    if not np.isfinite(X).all():
        # No data value in the message.
        raise ValueError("X contains non-finite values.")
    norms = compute_row_norms(X)
    scales = np.ones_like(norms)
    long_rows = norms > row_norm_bound
    scales[long_rows] = row_norm_bound / norms[long_rows]
    # A finite row whose norm overflows float64 is clipped like any other:
    # refusing it would let one row decide whether a model is released.
    for i in np.flatnonzero(np.isinf(norms)):
        row = np.abs(X[i].astype(np.float64))
        largest = row.max()
        scales[i] = (row_norm_bound / largest) / np.linalg.norm(row / largest)
    return scales


def _check_encoded_targets(y, code, n_outputs):
    """Refuse targets outside the encoding the constants assume (a caller's bug)."""
    if not np.isfinite(y).all():
        raise ValueError("y contains non-finite values.")
    loss = next(entry for entry in LOSSES.values() if code in (entry.code, entry.multiclass_code))
    if loss.task != "classification":
        return
    if n_outputs == 1:
        if not np.isin(y, loss.binary_targets).all():
            targets = ", ".join(f"{target:g}" for target in loss.binary_targets)
            raise ValueError(f"binary {loss.name} needs y encoded in {{{targets}}}.")
    elif not (np.isin(y, np.arange(n_outputs, dtype=np.float64))).all():
        raise ValueError(f"multiclass {loss.name} needs y encoded in 0 .. {n_outputs - 1}.")


class NoiseFreeDescent:
    """Output perturbation's descent as a backend of the training loop (a ``TrainingBackend``).

    Plain mini-batch gradient descent from zero weights in float64: step t takes the
    fixed batch ``t mod m``, its rows clipped on the fly by ``row_scales`` (X is never
    modified), the loss gradients summed unclipped, the intercept penalised too, and
    with ``weight_norm_bound`` the weights projected onto that ball after each step.
    """

    xp = None

    def __init__(self, X, y, row_scales, batches, *, loss_code, loss_threshold, fit_intercept,
                 n_outputs, sample_weight=None, weight_norm_bound=None):
        self.X, self.y, self.row_scales, self.batches = X, y, row_scales, batches
        self.loss_code, self.loss_threshold = loss_code, loss_threshold
        self.fit_intercept = fit_intercept
        self.sample_weight, self.weight_norm_bound = sample_weight, weight_norm_bound
        self.n_features = X.shape[1]
        self.params = np.zeros((n_outputs, self.n_features + 1))
        self._grad = np.zeros_like(self.params)

    def context(self):
        # Small matrix products: BLAS's threads only add synchronisation (3 times
        # slower per step measured on a loaded 2-core machine).
        return blas_controller().limit(limits=1, user_api="blas")

    def chunks(self, chunk_starts, chunk, lattice):
        n_steps = chunk_starts.stop
        for chunk_start in chunk_starts:
            yield chunk_start, min(chunk, n_steps - chunk_start), chunk_start

    def gradient_sum(self, params, draws, local_step):
        # The chunk's "draws" are its first step: the batches are fixed.
        rows = self.batches[(draws + local_step) % self.batches.shape[0]]
        x_batch = self.X[rows].astype(np.float64, copy=False)  # a copy (fancy indexing)
        x_batch *= self.row_scales[rows, None]
        n_features = self.n_features
        margins = x_batch @ params[:, :n_features].T + params[:, n_features]
        residuals = loss_derivative(None, self.loss_code, margins, self.y[rows],
                                    self.loss_threshold)
        if self.sample_weight is not None:
            residuals *= self.sample_weight[rows, None]
        # The loss gradients r_i [x_i, 1], summed (not clipped: the sensitivity
        # comes from the smoothness constants, not from a clip).
        self._grad[:, :n_features] = residuals.T @ x_batch
        if self.fit_intercept:
            self._grad[:, n_features] = residuals.sum(axis=0)
        return self._grad

    def smooth(self, grad):
        return grad

    def decay(self, params, shrink):
        # The intercept is penalised too (it is zero without one).
        params *= shrink
        return params

    def project(self, params):
        if self.weight_norm_bound is not None:
            norm = np.linalg.norm(params)
            if norm > self.weight_norm_bound:
                params *= self.weight_norm_bound / norm
        return params

    def new_average(self):
        raise NotImplementedError("output perturbation releases the last iterate")

    def add_to_average(self, averaged, params, count):
        raise NotImplementedError("output perturbation releases the last iterate")

    def compiled_steps(self, update):
        return None  # a step is a few small matrix products: Python steps

    def all_finite(self, params):
        return bool(np.isfinite(params).all())

    def to_host(self, params):
        return params

    def finish(self, params):
        return params


def add_output_noise(params, mechanism, rng, fit_intercept):
    """The release of ``params`` (shape (..., K, d + 1)) by ``mechanism``, as float64.

    On a lattice (every private fit): :func:`~._lattice.release_on_lattice`. Without
    noise the weights as they are; no floating-point noise is ever drawn.
    """
    if mechanism.grid_scale is not None:
        return release_on_lattice(params, mechanism, rng, fit_intercept)
    if mechanism.noise_std > 0:
        raise ValueError("a noisy output release must be planned on a lattice "
                         "(plan_on_lattice): no floating-point noise is drawn.")
    return np.array(params, dtype=np.float64)


def refuse_sparse(X):
    if sp.issparse(X):
        raise TypeError(
            "Output perturbation needs dense X (its descent clips and gathers dense "
            "rows). Sparse X is trained by DP-LSSGD's gradient perturbation "
            "(mechanism='gradient'), which uses the sparsity; or pass X.toarray() if it "
            "fits in memory."
        )


def train_output_perturbation(X, y, *, loss, n_outputs, fit_intercept, alpha, row_norm_bound,
                              eta, batch_size, n_passes, rng, loss_threshold, epsilon, delta,
                              weight_norm_bound=None, target_bound=None, seeded=False):
    """Plan and train a linear model by output perturbation (tests and the audit).

    :func:`plan_output_perturbation`, then :func:`release_output_perturbation` (the
    estimators call the two apart, to charge their ledger in between). ``eta=None``
    takes the default step; ``n_passes`` passes over the fixed batches; ``rng``
    draws the permutation, then the noise. Returns ``(params, mechanism)`` as
    :func:`release_output_perturbation` does.
    """
    refuse_sparse(X)
    X = np.asarray(X)
    plan = plan_output_perturbation(
        epsilon, delta, n_samples=X.shape[0] if X.ndim == 2 else 0, loss=loss,
        n_outputs=n_outputs, fit_intercept=fit_intercept, alpha=alpha,
        row_norm_bound=row_norm_bound, batch_size=batch_size, eta=eta,
        loss_threshold=loss_threshold, weight_norm_bound=weight_norm_bound,
        target_bound=target_bound)
    plan = plan_on_lattice(plan, X.shape[1]) if X.ndim == 2 else plan
    return release_output_perturbation(X, y, plan, n_passes=n_passes, rng=rng, seeded=seeded)


def _checked_inputs(X, y, plan, sample_weight):
    """X, y (float64, targets clipped as planned) and the weights, checked against the plan.

    A mismatch with the plan is a caller's bug: the sensitivity was computed for its
    batches, the lattice's float error bound for its features, the constants for
    weights at most ``plan.max_sample_weight`` and for the loss's target encoding.
    """
    refuse_sparse(X)
    X = np.asarray(X)
    if X.dtype not in (np.float32, np.float64):
        X = X.astype(np.float64)
    y = np.asarray(y, dtype=np.float64)
    if X.ndim != 2 or y.shape != (X.shape[0],):
        raise ValueError("X must be 2-D and y 1-D with one target per row of X.")
    if X.shape[0] // plan.batch_size != plan.n_batches:
        raise ValueError(
            f"The plan is for {plan.n_batches} batches of {plan.batch_size} rows; "
            f"X has {X.shape[0]} rows.")
    if plan.n_features is not None and plan.n_features != X.shape[1]:
        raise ValueError(f"The plan is for {plan.n_features} features; X has {X.shape[1]}.")
    if sample_weight is not None:
        sample_weight = np.asarray(sample_weight, dtype=np.float64)
        if sample_weight.shape != (X.shape[0],) or not (
                np.all(sample_weight >= 0) and np.all(sample_weight <= plan.max_sample_weight)):
            raise ValueError("sample_weight must hold one weight in [0, max_sample_weight] "
                             "per row.")
    _check_encoded_targets(y, loss_code(plan.loss, plan.n_outputs), plan.n_outputs)
    if required_bounds(plan.loss)[1] and plan.target_bound is not None:
        y = np.clip(y, -plan.target_bound, plan.target_bound)  # a copy
    return X, y, sample_weight


def release_output_perturbation(X, y, plan, *, n_passes, rng, seeded=False,
                                sample_weight=None):
    """Train the planned problem without noise, then release it with the planned noise.

    Rows are clipped to ``plan.row_norm_bound`` on the fly and regression targets to
    ``plan.target_bound``; one permutation drawn from ``rng`` is cut into the plan's
    batches; ``n_passes`` passes of noise-free descent with the constant step
    ``plan.eta`` run over them; the weights are released on the plan's lattice
    (:mod:`._lattice`; a plan made without the number of features is put on X's).

    Parameters
    ----------
    X : ndarray of shape (n_samples, d)
        ``n_samples`` must be the row count the plan was made for.
    y : ndarray of shape (n_samples,)
        Encoded targets: {0, 1} for binary log_loss, class indices for a multiclass
        loss, values for regression.
    plan : OutputPerturbationPlan
    n_passes : int
    rng : numpy.random.Generator
    seeded : bool, default=False
        Whether ``rng`` is a function of a seed that travels with the model.
    sample_weight : ndarray of shape (n_samples,) or None, default=None
        Each row's weight in ``[0, plan.max_sample_weight]``.

    Returns
    -------
    params : ndarray of shape (n_outputs, d + 1), in X's float dtype
        Coefficients, intercepts in the last column.
    mechanism : NoisyWeights
        ``plan.mechanism``, or its seeded copy.
    """
    X, y, sample_weight = _checked_inputs(X, y, plan, sample_weight)
    n_passes = check_positive_int(n_passes, "n_passes")
    plan = plan_on_lattice(plan, X.shape[1])
    code = loss_code(plan.loss, plan.n_outputs)
    threshold = 0.0 if plan.loss_threshold is None else plan.loss_threshold
    batches = fixed_batches(rng, X.shape[0], plan.batch_size)
    descent = NoiseFreeDescent(
        X, y, row_scales(X, plan.row_norm_bound), batches, loss_code=code,
        loss_threshold=threshold, fit_intercept=plan.fit_intercept, n_outputs=plan.n_outputs,
        sample_weight=sample_weight, weight_norm_bound=plan.weight_norm_bound)
    n_steps = n_passes * batches.shape[0]
    params = run_training(descent, TrainingPlan(
        loss_code=code, loss_threshold=threshold, fit_intercept=plan.fit_intercept,
        clip_norm=0.0, noise_multiplier=0.0, sample_rate=1.0, batch_size=plan.batch_size,
        n_steps=n_steps, n_epochs=n_passes, learning_rates=np.full(n_steps, plan.eta),
        alpha=plan.alpha, sigma=0.0))
    mechanism = plan.mechanism.seeded_copy() if seeded else plan.mechanism
    released = add_output_noise(params, mechanism, rng, plan.fit_intercept)
    return released.astype(X.dtype, copy=False), mechanism
