"""Small ONNX models built with onnx.helper for the converter's tests (no downloads)."""
import numpy as np


def resnet_like(path, seed=0, stem=16, width=30, classes=10, extra=()):
    """A ResNet-shaped stack: 3-channel stem, a residual block, a 1x1 projection to an odd
    width, a depthwise conv, a grouped conv, global pooling and a Gemm (transB=1) classifier,
    plus a MatMul with a constant (K, N) operand. Returns {initializer name: array}."""
    import onnx
    from onnx import TensorProto, helper, numpy_helper

    rng = np.random.default_rng(seed)
    inits, nodes, arrays = [], [], {}

    def w(name, *shape):
        a = rng.standard_normal(shape).astype(np.float32)
        arrays[name] = a
        inits.append(numpy_helper.from_array(a, name))
        return name

    def conv(name, x, y, o, i, k, group=1, bias=True):
        ins = [x, w(f"{name}.weight", o, i // group, k, k)]
        if bias:
            ins.append(w(f"{name}.bias", o))
        nodes.append(helper.make_node("Conv", ins, [y], name=name, group=group,
                                      pads=[k // 2] * 4))

    conv("stem", "x", "s", stem, 3, 3)
    nodes.append(helper.make_node("Relu", ["s"], ["s_r"]))
    conv("block1.conv1", "s_r", "b1", stem, stem, 3)
    nodes.append(helper.make_node("Relu", ["b1"], ["b1_r"]))
    conv("block1.conv2", "b1_r", "b2", stem, stem, 3, bias=False)
    nodes.append(helper.make_node("Add", ["b2", "s_r"], ["res"]))
    conv("proj", "res", "p", width, stem, 1)
    conv("dw", "p", "d", width, width, 3, group=width)
    conv("grouped", "d", "g", 48, width, 1, group=2)
    nodes.append(helper.make_node("BatchNormalization",
                                  ["g", w("bn.scale", 48), w("bn.bias", 48), w("bn.mean", 48),
                                   w("bn.var", 48)], ["bn"], name="bn"))
    nodes.append(helper.make_node("GlobalAveragePool", ["bn"], ["pool"]))
    nodes.append(helper.make_node("Flatten", ["pool"], ["flat"]))
    nodes.append(helper.make_node("Gemm", ["flat", w("fc.weight", 20, 48), w("fc.bias", 20)],
                                  ["fc"], name="fc", transB=1))
    nodes.append(helper.make_node("MatMul", ["fc", w("head.weight", 20, classes)], ["out"],
                                  name="head"))
    for node, more in extra:
        nodes.append(node)
        for name, a in more.items():
            arrays[name] = a
            inits.append(numpy_helper.from_array(a, name))
    graph = helper.make_graph(
        nodes, "resnet_like", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 3, 8, 8])],
        [helper.make_tensor_value_info("out", TensorProto.FLOAT, [1, classes])], inits)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    onnx.checker.check_model(model)
    onnx.save(model, str(path))
    return arrays
