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


def _save(path, nodes, inits, inputs, outputs, opset, name):
    import onnx
    from onnx import TensorProto, helper, numpy_helper
    graph = helper.make_graph(
        nodes, name, [helper.make_tensor_value_info(n, TensorProto.FLOAT, s) for n, s in inputs],
        [helper.make_tensor_value_info(n, TensorProto.FLOAT, s) for n, s in outputs],
        [numpy_helper.from_array(a, n) for n, a in inits.items()])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)])
    onnx.checker.check_model(model, full_check=True)       # strict shape inference too
    onnx.save(model, str(path))


def folded_ops(path, opset=17, seed=0):
    """Weights that reach Conv / Gemm / MatMul through constant shape-only ops, one branch per
    case, each with its own input and output (GoogLeNet's classifier is `cls.w`):

        cls.w [1, 1, 10, 16] -> Reshape (shape [10, 16], a Constant node) -> Gemm transB=1
        zm.w  [10, 1, 16]    -> Reshape (shape [0, -1], an initializer)   -> Gemm transB=1
        fl.w  [6, 2, 2, 2]   -> Flatten axis=1 -> [6, 8]                  -> MatMul B
        sq.w  [1, 8, 4, 3, 3] -> Squeeze axes [0]                         -> Conv
        usq.w [8, 4, 3]      -> Unsqueeze axes [-2] -> [8, 4, 1, 3]       -> Conv
        tr.w  [3, 3, 4, 8]   -> Transpose perm [3, 2, 0, 1] -> [8, 4, 3, 3] -> Conv
        trd.w [12, 10]       -> Transpose (no perm: reversed)             -> Gemm transB=1
        id.w  [8, 4, 1, 1]   -> Identity                                  -> Conv
        ch.w  [1, 10, 16]    -> Reshape [10, 16] -> Transpose [1, 0]      -> Gemm (K 16, N 10)

    Squeeze / Unsqueeze take their axes as an attribute before opset 13 and as an input
    from 13 on. Returns {initializer name: array} (the shape constants included)."""
    from onnx import TensorProto, helper

    rng = np.random.default_rng(seed)
    inits, nodes, inputs, outputs = {}, [], [], []

    def w(name, *shape):
        inits[name] = rng.standard_normal(shape).astype(np.float32)
        return name

    def ints(name, values):
        inits[name] = np.array(values, np.int64)
        return name

    def branch(tag, x_shape, y_shape):
        inputs.append((f"x_{tag}", x_shape))
        outputs.append((f"y_{tag}", y_shape))
        return f"x_{tag}", f"y_{tag}"

    def axes_of(node_name, op, data, out, axes):
        if opset >= 13:
            return helper.make_node(op, [data, ints(f"{node_name}.axes", axes)], [out],
                                    name=node_name)
        return helper.make_node(op, [data], [out], name=node_name, axes=axes)

    x, y = branch("cls", [2, 16], [2, 10])
    nodes.append(helper.make_node("Constant", [], ["cls.shape"], value=helper.make_tensor(
        "cls.shape", TensorProto.INT64, [2], [10, 16])))
    nodes.append(helper.make_node("Reshape", [w("cls.w", 1, 1, 10, 16), "cls.shape"], ["cls.r"],
                                  name="cls.reshape"))
    nodes.append(helper.make_node("Gemm", [x, "cls.r"], [y], name="cls.gemm", transB=1))

    x, y = branch("zm", [2, 16], [2, 10])
    nodes.append(helper.make_node("Reshape", [w("zm.w", 10, 1, 16), ints("zm.shape", [0, -1])],
                                  ["zm.r"], name="zm.reshape"))
    nodes.append(helper.make_node("Gemm", [x, "zm.r"], [y], name="zm.gemm", transB=1))

    x, y = branch("fl", [2, 6], [2, 8])
    nodes.append(helper.make_node("Flatten", [w("fl.w", 6, 2, 2, 2)], ["fl.f"], name="fl.flatten",
                                  axis=1))
    nodes.append(helper.make_node("MatMul", [x, "fl.f"], [y], name="fl.matmul"))

    x, y = branch("sq", [1, 4, 5, 5], [1, 8, 5, 5])
    nodes.append(axes_of("sq.squeeze", "Squeeze", w("sq.w", 1, 8, 4, 3, 3), "sq.s", [0]))
    nodes.append(helper.make_node("Conv", [x, "sq.s"], [y], name="sq.conv", pads=[1, 1, 1, 1]))

    x, y = branch("usq", [1, 4, 5, 5], [1, 8, 5, 5])
    nodes.append(axes_of("usq.unsqueeze", "Unsqueeze", w("usq.w", 8, 4, 3), "usq.u", [-2]))
    nodes.append(helper.make_node("Conv", [x, "usq.u"], [y], name="usq.conv", pads=[0, 1, 0, 1]))

    x, y = branch("tr", [1, 4, 5, 5], [1, 8, 5, 5])
    nodes.append(helper.make_node("Transpose", [w("tr.w", 3, 3, 4, 8)], ["tr.t"],
                                  name="tr.transpose", perm=[3, 2, 0, 1]))
    nodes.append(helper.make_node("Conv", [x, "tr.t"], [y], name="tr.conv", pads=[1, 1, 1, 1]))

    x, y = branch("trd", [2, 12], [2, 10])
    nodes.append(helper.make_node("Transpose", [w("trd.w", 12, 10)], ["trd.t"],
                                  name="trd.transpose"))
    nodes.append(helper.make_node("Gemm", [x, "trd.t"], [y], name="trd.gemm", transB=1))

    x, y = branch("id", [1, 4, 5, 5], [1, 8, 5, 5])
    nodes.append(helper.make_node("Identity", [w("id.w", 8, 4, 1, 1)], ["id.i"],
                                  name="id.identity"))
    nodes.append(helper.make_node("Conv", [x, "id.i"], [y], name="id.conv"))

    x, y = branch("ch", [2, 16], [2, 10])
    nodes.append(helper.make_node("Reshape", [w("ch.w", 1, 10, 16), ints("ch.shape", [10, 16])],
                                  ["ch.r"], name="ch.reshape"))
    nodes.append(helper.make_node("Transpose", ["ch.r"], ["ch.t"], name="ch.transpose",
                                  perm=[1, 0]))
    nodes.append(helper.make_node("Gemm", [x, "ch.t"], [y], name="ch.gemm"))

    _save(path, nodes, inits, inputs, outputs, opset, "folded_ops")
    return inits


def shared_initializer(path, seed=0):
    """Initializers that several fold chains read:

        sh.w   [4, 6]: MatMul B as stored, and Transpose -> sh.t [6, 4] -> MatMul B
        two.w  [1, 6, 4]: Reshape [6, 4] -> two.a -> MatMul; Reshape [4, 6] -> two.b -> MatMul
        same.w [1, 1, 10, 16]: Reshape [10, 16] and Flatten axis=3, each -> Gemm transB=1
    """
    from onnx import helper

    rng = np.random.default_rng(seed)
    inits = {"sh.w": rng.standard_normal((4, 6)).astype(np.float32),
             "two.w": rng.standard_normal((1, 6, 4)).astype(np.float32),
             "same.w": rng.standard_normal((1, 1, 10, 16)).astype(np.float32),
             "s64": np.array([6, 4], np.int64), "s46": np.array([4, 6], np.int64),
             "s1016": np.array([10, 16], np.int64)}
    node = helper.make_node
    nodes = [node("MatMul", ["x1", "sh.w"], ["y1"], name="sh.mm"),
             node("Transpose", ["sh.w"], ["sh.t"], name="sh.transpose"),
             node("MatMul", ["x2", "sh.t"], ["y2"], name="sh.mm_t"),
             node("Reshape", ["two.w", "s64"], ["two.a"], name="two.reshape_a"),
             node("MatMul", ["x3", "two.a"], ["y3"], name="two.mm_a"),
             node("Reshape", ["two.w", "s46"], ["two.b"], name="two.reshape_b"),
             node("MatMul", ["x4", "two.b"], ["y4"], name="two.mm_b"),
             node("Reshape", ["same.w", "s1016"], ["same.r"], name="same.reshape"),
             node("Gemm", ["x5", "same.r"], ["y5"], name="same.gemm_r", transB=1),
             node("Flatten", ["same.w"], ["same.f"], name="same.flatten", axis=3),
             node("Gemm", ["x6", "same.f"], ["y6"], name="same.gemm_f", transB=1)]
    inputs = [("x1", [2, 4]), ("x2", [2, 6]), ("x3", [2, 6]), ("x4", [2, 4]), ("x5", [2, 16]),
              ("x6", [2, 16])]
    outputs = [("y1", [2, 6]), ("y2", [2, 4]), ("y3", [2, 4]), ("y4", [2, 6]), ("y5", [2, 10]),
               ("y6", [2, 10])]
    _save(path, nodes, inits, inputs, outputs, 17, "shared")
    return inits


def deconv_model(path, layers, seed=0):
    """ConvTranspose layers, one branch each: `layers` is [(name, C_in, C_out, k, group,
    stride)]; the weight `<name>.weight` is ONNX's [C_in, C_out / group, k, k], with a bias
    `<name>.bias` [C_out]. Returns {initializer name: array}."""
    from onnx import helper

    rng = np.random.default_rng(seed)
    inits, nodes, inputs, outputs = {}, [], [], []
    for name, cin, cout, k, group, stride in layers:
        inits[f"{name}.weight"] = rng.standard_normal((cin, cout // group, k, k)).astype(np.float32)
        inits[f"{name}.bias"] = rng.standard_normal(cout).astype(np.float32)
        inputs.append((f"x_{name}", [1, cin, 4, 4]))
        outputs.append((f"y_{name}", [1, cout, 3 * stride + k, 3 * stride + k]))
        nodes.append(helper.make_node("ConvTranspose", [f"x_{name}", f"{name}.weight",
                                                        f"{name}.bias"], [f"y_{name}"],
                                      name=name, group=group, strides=[stride, stride],
                                      kernel_shape=[k, k]))
    _save(path, nodes, inits, inputs, outputs, 17, "deconv")
    return inits
