"""Writes a ModelProto whose main graph holds an If whose then-branch holds
an If ... DEPTH levels deep (each else-branch yields x at once), encoded by
hand: the protobuf libraries refuse to build messages that deep. Graph
inputs c: bool[] and x: float32[2]; output y0 (x, whichever branch).

Usage: nested_graphs.py DEPTH OUT
"""
import sys


def varint(n):
    out = bytearray()
    while True:
        byte, n = n & 0x7F, n >> 7
        out.append(byte | (0x80 if n else 0))
        if not n:
            return bytes(out)


def field(number, payload):
    return varint(number << 3 | 2) + varint(len(payload)) + payload


def number(field_number, value):
    return varint(field_number << 3) + varint(value)


def value_info(name, elem_type, dims):
    # ValueInfoProto{name(1), type(2): TypeProto{tensor_type(1): {elem_type(1),
    # shape(2): {dim(1): {dim_value(1)}}}}}
    shape = b"".join(field(1, number(1, d)) for d in dims)
    return field(1, name) + field(2, field(1, number(1, elem_type) + field(2, shape)))


def main():
    depth, out = int(sys.argv[1]), sys.argv[2]
    # GraphProto: node(1), input(11), output(12). NodeProto: input(1),
    # output(2), op_type(4), attribute(5). AttributeProto: name(1), g(6),
    # type(20) = GRAPH (5). A branch yields x from the outer scope, or y<k+1>.
    leaf = field(12, field(1, b"x"))
    graph = leaf
    for level in reversed(range(depth)):
        attrs = b"".join(field(5, field(1, name) + number(20, 5) + field(6, branch))
                         for name, branch in ((b"then_branch", graph), (b"else_branch", leaf)))
        y = b"y%d" % level
        node = field(1, b"c") + field(2, y) + field(4, b"If") + attrs
        graph = field(1, node) + field(12, field(1, y))
    graph += field(11, value_info(b"c", 9, [])) + field(11, value_info(b"x", 1, [2]))
    model = number(1, 8) + field(8, field(1, b"") + number(2, 18)) + field(7, graph)
    with open(out, "wb") as f:
        f.write(model)


if __name__ == "__main__":
    main()
