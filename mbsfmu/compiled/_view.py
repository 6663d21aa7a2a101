"""Typed views on the packed buffer, for compiled code.

``view(buf, offset, shape)``: the float64 array of ``shape`` on the 1-D float64 buffer from word
``offset`` (C order): what ``buf[offset: offset + size].reshape(shape)`` gives, without
reshape's run-time checks and helper call (~65 ns each, ~0.9 us for the 13 arrays a kernel
unpacks, as much as a 7-DoF ABA). ``iview(buf, offset, shape)``: the same words read as int64
(``buf.view(np.int64)`` in numpy). The caller guarantees offset + prod(shape) <= len(buf);
layout.Packed sizes the buffer so.
"""
from __future__ import annotations

from numba.core import cgutils, types
from numba.core.imputils import impl_ret_borrowed
from numba.extending import intrinsic
from numba.np.arrayobj import make_array, populate_array


def _typed_view(buf, offset, shape, dtype):
    """(signature, codegen) of a C-contiguous ``dtype`` view, or None for other argument types."""
    if not (isinstance(buf, types.Array) and buf.ndim == 1 and buf.layout == "C" and buf.dtype == types.float64):
        return None
    if not (isinstance(offset, types.Integer) and isinstance(shape, types.UniTuple)
            and isinstance(shape.dtype, types.Integer)):
        return None
    nd = shape.count
    retty = types.Array(dtype, nd, "C")
    sig = retty(buf, offset, shape)

    def codegen(context, builder, signature, args):
        buf_v, off_v, shape_v = args
        src = make_array(signature.args[0])(context, builder, buf_v)
        dest = make_array(retty)(context, builder)
        intp = context.get_value_type(types.intp)
        shapes = [builder.sext(s, intp) if s.type.width < intp.width else s
                  for s in cgutils.unpack_tuple(builder, shape_v, nd)]
        itemsize = context.get_constant(types.intp, 8)
        strides = [None] * nd
        stride = itemsize
        for k in range(nd - 1, -1, -1):
            strides[k] = stride
            stride = builder.mul(stride, shapes[k])
        off = builder.sext(off_v, intp) if off_v.type.width < intp.width else off_v
        data = builder.gep(src.data, [off])
        data = builder.bitcast(data, context.get_value_type(dtype).as_pointer())
        populate_array(dest, data=data, shape=shapes, strides=strides, itemsize=itemsize,
                       meminfo=src.meminfo, parent=src.parent)
        return impl_ret_borrowed(context, builder, retty, dest._getvalue())

    return sig, codegen


@intrinsic
def view(typingctx, buf, offset, shape):
    """float64 C-contiguous view of buf (1-D float64) from word offset, shape a tuple of ints."""
    return _typed_view(buf, offset, shape, types.float64)


@intrinsic
def iview(typingctx, buf, offset, shape):
    """int64 C-contiguous view of the words of buf (1-D float64) from offset."""
    return _typed_view(buf, offset, shape, types.int64)
