"""The warning that almost every gradient of a fit is clipped far down."""

import math
import warnings

import numpy as np

from .._backends import initial_gradient_norms, share_of_rows
from .._training import LOSSES, loss_code, residual_norms_at_zero

__all__ = ["CLIPPED_FACTOR", "CLIPPED_SHARE", "warn_if_mostly_clipped"]

# Initial gradients this many times the clip norm, for this share of the
# rows, trigger the warning.
CLIPPED_FACTOR = 10.0
CLIPPED_SHARE = 0.9


def warn_if_mostly_clipped(settings, data, row_norms=None):
    """Warn the data holder when almost every gradient is clipped far down.

    At zero weights row i's gradient norm is ``||r_i|| sqrt(||x_i||^2 + 1)``;
    the warning fires when a share ``CLIPPED_SHARE`` of the rows exceed
    ``CLIPPED_FACTOR * clip_norm``. The advice compares the rows' median norm
    with ``sqrt(d + 1)``, the most a row in ``[-1, 1]`` has. It reads the
    rows only to warn the person running the fit (docs/privacy.rst); the fit
    is the same either way. ``row_norms``: the ``||x_i||`` training uses too.
    """
    code = loss_code(settings.loss, data.n_outputs)
    threshold = LOSSES[settings.loss].threshold(settings)
    fit_intercept = bool(settings.fit_intercept)
    limit = CLIPPED_FACTOR * float(settings.clip_norm)
    if row_norms is not None:
        def clipped_far(start, stop):
            # An overflowing square is simply "far above the limit".
            with np.errstate(all="ignore"):
                residual_norms = residual_norms_at_zero(
                    code, data.y_encoded[start:stop], data.n_outputs, threshold)
                return residual_norms * np.sqrt(
                    row_norms[start:stop]**2 + float(fit_intercept)) > limit

        share = share_of_rows(clipped_far, len(row_norms), settings.n_threads)
        if not share >= CLIPPED_SHARE:
            return
        with np.errstate(all="ignore"):
            row_norms = np.sqrt(row_norms**2 + float(fit_intercept))
    else:
        norms, row_norms = initial_gradient_norms(
            data.X, data.y_encoded, data.n_outputs, code, threshold, fit_intercept)
        if not np.mean(norms > limit) >= CLIPPED_SHARE:
            return
    median = float(np.median(row_norms))
    if median > max(CLIPPED_FACTOR, math.sqrt(data.X.shape[1] + float(fit_intercept))):
        advice = ("the features are far from unit scale: declare their public range with "
                  "feature_bounds=(lower, upper) (or BoundedScaler in a pipeline), not a "
                  "scaler fitted on the private rows")
    elif median > CLIPPED_FACTOR:
        advice = ("the rows are wide, and a part of every row that does not vary (a "
                  "background) takes most of each clipped gradient. Keep such entries at 0: "
                  "feature_bounds=(0, upper) keeps zeros on an image's columns (its width, "
                  "numbered columns or sigma='ordered'), and BoundedScaler(0, upper, "
                  "keep_zero=True) on other mostly-zero columns")
    else:
        advice = "clip_norm is small compared with the gradients: raise it (eta0 follows it)"
    warnings.warn(
        f"Almost every training row's gradient is more than "
        f"{CLIPPED_FACTOR:g} times clip_norm and is clipped, so the fit "
        f"learns slowly: {advice}. (This check is shown only to you; "
        "it changes nothing in the fit.)", UserWarning)
