"""The contract between the one training loop and a backend.

:func:`~sklearn_dplssgd._training.run_training` owns what every release
shares (the plan, the per-step noise scale, the order of the draws, the
learning rate, the optimizer, averaging, the divergence checks); a backend
supplies only what depends on where the arrays live. :class:`TrainingBackend`
lists what the loop calls, so that a new backend (a GPU, a cluster) has a
checked contract: ``tests/test_backend_contract.py`` checks every backend
class against it.

A backend must never change the plan's T, q, C or z, and must never draw
noise or batches that the plan does not account for: it runs the mechanism's
steps, the mechanism's event describes them.
"""

import typing

__all__ = ["TrainingBackend"]


@typing.runtime_checkable
class TrainingBackend(typing.Protocol):
    """What :func:`~sklearn_dplssgd._training.run_training` calls on a backend.

    Attributes
    ----------
    xp : module or None
        The array namespace of the parameters; None for NumPy arrays updated
        in place.
    params : array of shape (K, d + 1)
        The starting parameters (zeros, or a warm start), intercept last.
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
        """The draws of each chunk of steps, in the loop's one fixed order.

        Parameters
        ----------
        chunk_starts : range
            ``range(0, T, chunk)``: the first step of each chunk.
        chunk : int
            The number of steps of a full chunk.
        lattice : Lattice or None
            The lattice the steps' sums are released on, with each step's
            integer noise scale (:class:`~._lattice.Lattice`); None where no
            noise is drawn.

        Yields
        ------
        chunk_start : int
        chunk_steps : int
            The number of steps of this chunk.
        draws : object
            What :meth:`gradient_sum` needs for those steps (batches and
            integer noise, :func:`~sklearn_dplssgd._backends._numpy.chunk_noise`),
            drawn from the fit's generator only.
        """

    def gradient_sum(self, params, draws, local_step):
        """One step's released gradient sum: clipped per sample, released on the lattice.

        Parameters
        ----------
        params : array of shape (K, d + 1)
        draws : object
            The chunk's draws, as :meth:`chunks` yielded them.
        local_step : int
            The step's index within the chunk.

        Returns
        -------
        grad : array of shape (K, d + 1)
            The sum over the step's batch (not divided by the batch size),
            rounded onto the lattice plus its integer noise, times the
            lattice step (:func:`~._lattice.release_on_lattice`).
        """

    def smooth(self, grad):
        """Laplacian smoothing of a gradient (post-processing; may work in place).

        Parameters
        ----------
        grad : array of shape (K, d + 1)

        Returns
        -------
        grad : array of shape (K, d + 1)
        """

    def decay(self, params, shrink):
        """Weight decay: the weights (not the intercept, unless penalised) times ``shrink``.

        Parameters
        ----------
        params : array of shape (K, d + 1)
        shrink : float
            ``1 - eta_t alpha``.

        Returns
        -------
        params : array of shape (K, d + 1)
        """

    def project(self, params):
        """The parameters after the optimizer's step, projected where the release needs it.

        Parameters
        ----------
        params : array of shape (K, d + 1)

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

        Parameters
        ----------
        averaged : array of shape (K, d + 1)
        params : array of shape (K, d + 1)
        count : int

        Returns
        -------
        averaged : array of shape (K, d + 1)
        """

    def all_finite(self, params):
        """Whether every parameter is finite (on a device: one synchronisation).

        Parameters
        ----------
        params : array of shape (K, d + 1)

        Returns
        -------
        finite : bool
        """

    def to_host(self, params):
        """The parameters as a NumPy array, for the progress report and the callback.

        Parameters
        ----------
        params : array of shape (K, d + 1)

        Returns
        -------
        params : ndarray of shape (K, d + 1)
        """

    def finish(self, params):
        """The released parameters, in the fit's dtype.

        Parameters
        ----------
        params : array of shape (K, d + 1)
            The last iterate, or the mean of the iterates.

        Returns
        -------
        params : array of shape (K, d + 1)
        """

    def compiled_steps(self, update):
        """A function running a segment of steps in one compiled call, or None.

        Parameters
        ----------
        update : OptimizerRun
            The optimizer's state for this fit.

        Returns
        -------
        run : callable or None
            ``run(params, averaged, draws, chunk_start, local_start,
            local_stop) -> (params, averaged)``, the same steps as
            :func:`~sklearn_dplssgd._training.python_steps`; None where the
            loop must step in Python.
        """
