"""Deliberately broken gradient kernels, run through the NumPy backend's seam.

The audit's own tests show that a broken implementation is caught: a kernel
that forgets the per-sample clip, scales the noise for the mean, or clips the
batch's sum. Such a kernel runs as a backend of its own
(``SubstitutedKernelTraining``, a subclass of the NumPy backend), selected
for a block by :func:`substituted_gradient_kernel`; the training loop, the
draws and the plan are the library's, unchanged, and the production backend
holds no test hook.
"""

import contextlib

from sklearn_dplssgd._backends import NumpyTraining, use_numpy_backend

__all__ = ["SubstitutedKernelTraining", "substituted_gradient_kernel"]


class SubstitutedKernelTraining(NumpyTraining):
    """The NumPy backend with other kernels for a step's noisy clipped gradient sum.

    Every step goes through ``dense_kernel`` (dense rows) or
    ``sparse_kernel`` (CSR rows), one call at a time: the compiled runs of
    steps embed the standard kernels, hence ``supports_compiled_runs =
    False``. A kernel left None is the standard one, called the same way. A
    kernel takes the arguments of
    ``backends.noisy_clipped_gradient_sum`` (or
    its sparse form) without ``feature_norms``, and writes the sum into ``grad``.
    """

    supports_compiled_runs = False
    dense_kernel = None
    sparse_kernel = None

    def gradient_kernel(self, sparse):
        kernel = self.sparse_kernel if sparse else self.dense_kernel
        return super().gradient_kernel(sparse) if kernel is None else kernel


@contextlib.contextmanager
def substituted_gradient_kernel(dense=None, *, sparse=None):
    """Run the NumPy fits inside the block with other gradient kernels.

    Parameters
    ----------
    dense : callable or None, default=None
        The kernel of dense rows: ``dense(X, y, rows, params, row_norms,
        code, threshold, clip_norm, fit_intercept, noise, grad, n_threads=1)``
        (plus ``weights=`` for a weighted fit), as
        ``backends.noisy_clipped_gradient_sum``.
        None: the standard one.
    sparse : callable or None, default=None
        The kernel of CSR rows, as
        ``backends.noisy_clipped_gradient_sum_sparse``.
        None: the standard one.

    Yields
    ------
    backend_class : type
        The subclass of ``SubstitutedKernelTraining`` that runs the fits.
    """
    kernels = {"dense_kernel": dense, "sparse_kernel": sparse}
    if all(kernel is None for kernel in kernels.values()):
        raise TypeError("Give a dense or a sparse kernel to substitute.")
    if not all(kernel is None or callable(kernel) for kernel in kernels.values()):
        raise TypeError("A substituted kernel must be callable.")
    backend_class = type("SubstitutedKernelTraining", (SubstitutedKernelTraining,),
                         {name: None if kernel is None else staticmethod(kernel)
                          for name, kernel in kernels.items()})
    with use_numpy_backend(backend_class):
        yield backend_class
