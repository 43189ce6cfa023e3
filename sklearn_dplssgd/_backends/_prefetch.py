"""Software prefetch for the compiled kernels: ask for a row's cache lines early.

A Poisson batch is a random subset of the rows, so on a table larger than
the cache every row of it is a cache miss (and its target and norm are two
more). The one-output kernel spends as long on a narrow row's arithmetic as
on its misses, one after the other; asking for the rows of one block ahead
while it computes the current block overlaps the two (see
:func:`._kernels.single_output_sum_into`).

A prefetch is a hint: it reads nothing into any variable, cannot fault (an
address outside the arrays is ignored by the processor) and changes no
result, only when the lines arrive. It is LLVM's ``llvm.prefetch``
intrinsic, reached through Numba's public extension API
(:func:`numba.extending.intrinsic`) and llvmlite's IR builder.
"""

from llvmlite import ir
from numba import types
from numba.extending import intrinsic

__all__ = ["CACHE_LINE", "prefetch_address"]

# Bytes per cache line on the x86-64 and ARM processors this runs on; a
# longer line only makes some prefetches redundant.
CACHE_LINE = 64

# llvm.prefetch(address, rw, locality, cache type): a read (0), kept in all
# cache levels (3), of data (1).
_READ, _KEEP_IN_ALL_LEVELS, _DATA = 0, 3, 1


@intrinsic
def prefetch_address(typingctx, address):
    """Prefetch the cache line holding byte ``address`` (an integer) for reading."""
    if not isinstance(address, types.Integer):
        return None

    def codegen(context, builder, signature, args):
        byte_pointer = ir.IntType(8).as_pointer()
        int32 = ir.IntType(32)
        name = "llvm.prefetch.p0i8"
        function = builder.module.globals.get(name)
        if function is None:
            function = ir.Function(
                builder.module,
                ir.FunctionType(ir.VoidType(), [byte_pointer, int32, int32, int32]), name=name)
        pointer = builder.inttoptr(args[0], byte_pointer)
        builder.call(function, [pointer, ir.Constant(int32, _READ),
                                ir.Constant(int32, _KEEP_IN_ALL_LEVELS),
                                ir.Constant(int32, _DATA)])
        return context.get_dummy_value()

    return types.void(types.intp), codegen
