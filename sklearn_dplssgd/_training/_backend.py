"""The contract between the one training loop and a backend.

:func:`~sklearn_dplssgd._training.run_training` owns what every release
shares (the plan, the noise scale, the order of the draws, the learning rate,
the optimizer, averaging, the divergence checks); a backend supplies only
what depends on where the arrays live. It must never change the plan's T, q,
C or z, nor draw noise or batches the plan does not account for
(docs/developers.rst, "Where to add a backend"). ``params``, ``grad`` and
``averaged`` are arrays of shape (K, d + 1), intercept last.
"""

import typing

__all__ = ["TrainingBackend"]


@typing.runtime_checkable
class TrainingBackend(typing.Protocol):
    """What :func:`~sklearn_dplssgd._training.run_training` calls on a backend.

    Attributes
    ----------
    xp : module or None
        The parameters' array namespace; None for NumPy arrays updated in place.
    params : array of shape (K, d + 1)
        The starting parameters (zeros, or a warm start).
    """

    xp: typing.Any
    params: typing.Any

    def context(self):
        """A context manager held around the whole loop (thread limits, a thread team).

        Returns
        -------
        context : context manager
        """

    def chunks(self, chunk_starts, chunk, lattice):
        """The draws of each chunk (``chunk_starts``: ``range(0, T, chunk)``), in one order.

        ``lattice`` is the :class:`~._lattice.Lattice` the sums are released
        on (None: no noise).

        Yields
        ------
        chunk_start, chunk_steps : int
        draws : object
            What :meth:`gradient_sum` needs for the chunk's steps (batches and
            integer noise), drawn from the fit's generator only.
        """

    def gradient_sum(self, params, draws, local_step):
        """One step's released gradient sum; the only call that reads rows.

        Returns
        -------
        grad : array of shape (K, d + 1)
            The batch's per-sample clipped sum (not divided by the batch
            size) released on the lattice (:func:`~._lattice.release_on_lattice`).
        """

    def smooth(self, grad):
        """Laplacian smoothing (post-processing; may work in place).

        Returns
        -------
        grad : array of shape (K, d + 1)
        """

    def decay(self, params, shrink):
        """The weights (not the intercept, unless penalised) times ``shrink``.

        Returns
        -------
        params : array of shape (K, d + 1)
        """

    def project(self, params):
        """The parameters after the optimizer's step, projected where the release needs it.

        Returns
        -------
        params : array of shape (K, d + 1)
        """

    def new_average(self):
        """A zero running mean of the iterates (float64 on the NumPy backend).

        Returns
        -------
        averaged : array of shape (K, d + 1)
        """

    def add_to_average(self, averaged, params, count):
        """The running mean of the iterates with ``params`` as its ``count``-th term.

        Returns
        -------
        averaged : array of shape (K, d + 1)
        """

    def all_finite(self, params):
        """Whether every parameter is finite (on a device: one synchronisation).

        Returns
        -------
        finite : bool
        """

    def to_host(self, params):
        """The parameters for the progress report and the callback.

        Returns
        -------
        params : ndarray of shape (K, d + 1)
        """

    def finish(self, params):
        """The released parameters (the last iterate or the mean) in the fit's dtype.

        Returns
        -------
        params : array of shape (K, d + 1)
        """

    def compiled_steps(self, update):
        """A function running a segment of steps in one compiled call, or None.

        Returns
        -------
        run : callable or None
            ``run(params, averaged, draws, chunk_start, local_start,
            local_stop) -> (params, averaged)``, the steps of
            :func:`~sklearn_dplssgd._training.python_steps` with the
            optimizer state ``update``; None where the loop steps in Python.
        """
