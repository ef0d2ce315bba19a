"""Layer shapes of real networks, written down from their published architectures (torchvision's
definitions and the papers), batch 1, the inputs their exporters use.

Each network is a list of layers as ONNX stores them, the arguments of
reorder.models.onednn_runtime.make_layer:
    ("conv", (N, C, H, W), (O, C/G, kh, kw), strides, pads, groups)
    ("deconv", (N, C, H, W), (C, O/G, kh, kw), strides, pads, groups)
    ("gemm", (M, K), (N, K))           Gemm with transB = 1 (torch Linear on 2-D input)
    ("matmul", (1, M, K), (K, N))      MatMul with a constant B (torch Linear on 3-D input)

SWEEP is what the fallback tables are measured on; HELD_OUT are other networks, never
measured for the tables, on which their agreement with the real query is reported.
"""


def conv(ci, co, k, s, h, g=1, w=None, pad=None, dims=2):
    """A convolution on a (1, ci, h, w) input; pad defaults to k // 2 (the "same" of odd k)."""
    p = k // 2 if pad is None else pad
    sp = (h,) if dims == 1 else (h, w or h)
    return ("conv", (1, ci) + sp, (co, ci // g) + (k,) * dims, (s,) * dims, (p,) * 2 * dims, g)


def dw(c, k, s, h):
    return conv(c, c, k, s, h, g=c)


def deconv(ci, co, k, s, h, pad, g=1):
    return ("deconv", (1, ci, h, h), (ci, co // g, k, k), (s, s), (pad,) * 4, g)


def gemm(k, n, m=1):
    return ("gemm", (m, k), (n, k))


def matmul(k, n, m):
    return ("matmul", (1, m, k), (k, n))


def _out(h, s):
    return -(-h // s)


def resnet_basic(blocks):
    """ResNet-18/34: 7x7 stem, then basic blocks of two 3x3 at 64/128/256/512."""
    out, h, c = [conv(3, 64, 7, 2, 224)], 56, 64
    for stage, n in enumerate(blocks):
        w = 64 << stage
        for b in range(n):
            s = 2 if b == 0 and stage else 1
            out.append(conv(c, w, 3, s, h))
            if s != 1 or c != w:
                out.append(conv(c, w, 1, s, h, pad=0))
            h = _out(h, s)
            out.append(conv(w, w, 3, 1, h))
            c = w
    return out + [gemm(512, 1000)]


def resnet_bottleneck(blocks, groups=1, width_per_group=64):
    """ResNet-50 (groups 1) and ResNeXt (groups 32): torchvision's v1.5, stride on the 3x3."""
    out, h, c = [conv(3, 64, 7, 2, 224)], 56, 64
    for stage, n in enumerate(blocks):
        w = (width_per_group * groups // 64) * (64 << stage)
        co = 256 << stage
        for b in range(n):
            s = 2 if b == 0 and stage else 1
            out.append(conv(c, w, 1, 1, h, pad=0))
            out.append(conv(w, w, 3, s, h, g=groups))
            if b == 0:
                out.append(conv(c, co, 1, s, h, pad=0))
            h = _out(h, s)
            out.append(conv(w, co, 1, 1, h, pad=0))
            c = co
    return out + [gemm(2048, 1000)]


def mobilenet_v2():
    out, h, c = [conv(3, 32, 3, 2, 224)], 112, 32
    for t, co, n, s in ((1, 16, 1, 1), (6, 24, 2, 2), (6, 32, 3, 2), (6, 64, 4, 2),
                        (6, 96, 3, 1), (6, 160, 3, 2), (6, 320, 1, 1)):
        for i in range(n):
            st = s if i == 0 else 1
            e = c * t
            if t != 1:
                out.append(conv(c, e, 1, 1, h, pad=0))
            out.append(dw(e, 3, st, h))
            h = _out(h, st)
            out.append(conv(e, co, 1, 1, h, pad=0))
            c = co
    return out + [conv(320, 1280, 1, 1, 7, pad=0), gemm(1280, 1000)]


def mobilenet_v3_large():
    """MobileNetV3-Large: (kernel, expanded, out, SE, stride) per block; SE's two 1x1 at 1x1."""
    cfg = [(3, 16, 16, 0, 1), (3, 64, 24, 0, 2), (3, 72, 24, 0, 1), (5, 72, 40, 1, 2),
           (5, 120, 40, 1, 1), (5, 120, 40, 1, 1), (3, 240, 80, 0, 2), (3, 200, 80, 0, 1),
           (3, 184, 80, 0, 1), (3, 184, 80, 0, 1), (3, 480, 112, 1, 1), (3, 672, 112, 1, 1),
           (5, 672, 160, 1, 2), (5, 960, 160, 1, 1), (5, 960, 160, 1, 1)]
    out, h, c = [conv(3, 16, 3, 2, 224)], 112, 16
    for k, e, co, se, s in cfg:
        if e != c:
            out.append(conv(c, e, 1, 1, h, pad=0))
        out.append(dw(e, k, s, h))
        h = _out(h, s)
        if se:
            sq = ((e // 4 + 4) // 8) * 8
            out += [conv(e, sq, 1, 1, 1, pad=0), conv(sq, e, 1, 1, 1, pad=0)]
        out.append(conv(e, co, 1, 1, h, pad=0))
        c = co
    return out + [conv(160, 960, 1, 1, 7, pad=0), gemm(960, 1280), gemm(1280, 1000)]


def shufflenet_v1(groups):
    """ShuffleNet v1 (the ONNX zoo's is groups 3): grouped 1x1 convolutions around a depthwise
    3x3; the first 1x1 of stage 2 is ungrouped (24 input channels)."""
    widths = {3: (240, 480, 960), 8: (384, 768, 1536)}[groups]
    out, h, c = [conv(3, 24, 3, 2, 224)], 56, 24
    for stage, (co, n) in enumerate(zip(widths, (4, 8, 4))):
        for b in range(n):
            s = 2 if b == 0 else 1
            mid = co // 4
            g1 = 1 if stage == 0 and b == 0 else groups
            o = co - c if s == 2 else co            # stride 2 units concatenate the shortcut
            out.append(conv(c, mid, 1, 1, h, g=g1, pad=0))
            out.append(dw(mid, 3, s, h))
            h = _out(h, s)
            out.append(conv(mid, o, 1, 1, h, g=groups, pad=0))
            c = co
    return out + [gemm(widths[-1], 1000)]


def shufflenet_v2():
    out, h, c = [conv(3, 24, 3, 2, 224)], 56, 24
    for co, n in ((116, 4), (232, 8), (464, 4)):
        half = co // 2
        for b in range(n):
            if b == 0:
                out += [dw(c, 3, 2, h), conv(c, half, 1, 1, _out(h, 2), pad=0),
                        conv(c, half, 1, 1, h, pad=0), dw(half, 3, 2, h)]
                h = _out(h, 2)
            else:
                out += [conv(half, half, 1, 1, h, pad=0), dw(half, 3, 1, h)]
            out.append(conv(half, half, 1, 1, h, pad=0))
            c = co
    return out + [conv(464, 1024, 1, 1, 7, pad=0), gemm(1024, 1000)]


def regnet(widths, depths, group_width, se):
    """RegNetX / RegNetY (bottleneck ratio 1): 1x1, grouped 3x3 of `group_width` channels a
    group, [SE at 1x1 of a quarter of the block's input], 1x1."""
    out, h, c = [conv(3, 32, 3, 2, 224)], 112, 32
    for w, n in zip(widths, depths):
        for b in range(n):
            s = 2 if b == 0 else 1
            out.append(conv(c, w, 1, 1, h, pad=0))
            out.append(conv(w, w, 3, s, h, g=w // group_width))
            if b == 0:
                out.append(conv(c, w, 1, s, h, pad=0))
            h = _out(h, s)
            if se:
                sq = c // 4
                out += [conv(w, sq, 1, 1, 1, pad=0), conv(sq, w, 1, 1, 1, pad=0)]
            out.append(conv(w, w, 1, 1, h, pad=0))
            c = w
    return out + [gemm(widths[-1], 1000)]


def vit(dim, mlp, patch=16, tokens=197, blocks=1):
    """ViT: the patch embedding convolution, then per block qkv, proj, fc1, fc2 as MatMul on
    (1, tokens, dim) (torch Linear on 3-D input); the head as Gemm on the class token. Every
    block has the same shapes, so one is enough."""
    out = [conv(3, dim, patch, patch, 224, pad=0)]
    for _ in range(blocks):
        out += [matmul(dim, 3 * dim, tokens), matmul(dim, dim, tokens),
                matmul(dim, mlp, tokens), matmul(mlp, dim, tokens)]
    return out + [gemm(dim, 1000)]


def dcgan_generator():
    """DCGAN's generator: 4x4 deconvolutions, stride 2 pad 1 after a stride 1 projection."""
    return [deconv(100, 512, 4, 1, 1, 0), deconv(512, 256, 4, 2, 4, 1),
            deconv(256, 128, 4, 2, 8, 1), deconv(128, 64, 4, 2, 16, 1),
            deconv(64, 3, 4, 2, 32, 1)]


def fcn_upsample():
    """FCN-style learned upsampling of 21 class maps (kernel 2s, stride s), and a grouped
    bilinear-initialised one (one group a class)."""
    return [deconv(21, 21, 4, 2, 7, 1), deconv(21, 21, 16, 8, 28, 4),
            deconv(64, 64, 4, 2, 28, 1, g=64)]


def googlenet():
    """Inception v1 as the ONNX zoo has it (5x5 in the third branch): per block the 1x1, the
    1x1 before a 3x3, the 1x1 before a 5x5 and the pooling branch's 1x1."""
    cfg = [(192, 64, 96, 128, 16, 32, 32, 28), (256, 128, 128, 192, 32, 96, 64, 28),
           (480, 192, 96, 208, 16, 48, 64, 14), (512, 160, 112, 224, 24, 64, 64, 14),
           (512, 128, 128, 256, 24, 64, 64, 14), (512, 112, 144, 288, 32, 64, 64, 14),
           (528, 256, 160, 320, 32, 128, 128, 14), (832, 256, 160, 320, 32, 128, 128, 7),
           (832, 384, 192, 384, 48, 128, 128, 7)]
    out = [conv(3, 64, 7, 2, 224), conv(64, 64, 1, 1, 56, pad=0), conv(64, 192, 3, 1, 56)]
    for ci, c1, c3r, c3, c5r, c5, pp, h in cfg:
        out += [conv(ci, c1, 1, 1, h, pad=0), conv(ci, c3r, 1, 1, h, pad=0),
                conv(c3r, c3, 3, 1, h), conv(ci, c5r, 1, 1, h, pad=0), conv(c5r, c5, 5, 1, h),
                conv(ci, pp, 1, 1, h, pad=0)]
    return out + [gemm(1024, 1000)]


def alexnet():
    return [conv(3, 64, 11, 4, 224, pad=2), conv(64, 192, 5, 1, 27), conv(192, 384, 3, 1, 13),
            conv(384, 256, 3, 1, 13), conv(256, 256, 3, 1, 13), gemm(9216, 4096),
            gemm(4096, 4096), gemm(4096, 1000)]


def wav2vec2_features():
    """wav2vec 2.0's 1-D feature encoder on one second of 16 kHz audio."""
    out, n = [conv(1, 512, 10, 5, 16000, pad=0, dims=1)], 3199
    for k in (3, 3, 3, 3, 2, 2):
        out.append(conv(512, 512, k, 2, n, pad=0, dims=1))
        n = (n - k) // 2 + 1
    return out


def densenet121():
    """DenseNet-121: per dense layer a 1x1 to 128 and a 3x3 to 32 on the growing input;
    transitions halve the channels with a 1x1 before the pooling."""
    out, h, c = [conv(3, 64, 7, 2, 224)], 56, 64
    for i, n in enumerate((6, 12, 24, 16)):
        for _ in range(n):
            out += [conv(c, 128, 1, 1, h, pad=0), conv(128, 32, 3, 1, h)]
            c += 32
        if i < 3:
            out.append(conv(c, c // 2, 1, 1, h, pad=0))
            c, h = c // 2, h // 2
    return out + [gemm(1024, 1000)]


def squeezenet11():
    cfg = [(64, 16, 64, 55), (128, 16, 64, 55), (128, 32, 128, 27), (256, 32, 128, 27),
           (256, 48, 192, 13), (384, 48, 192, 13), (384, 64, 256, 13), (512, 64, 256, 13)]
    out = [conv(3, 64, 3, 2, 224, pad=0)]
    for ci, sq, ex, h in cfg:
        out += [conv(ci, sq, 1, 1, h, pad=0), conv(sq, ex, 1, 1, h, pad=0),
                conv(sq, ex, 3, 1, h)]
    return out + [conv(512, 1000, 1, 1, 13, pad=0)]


def efficientnet_b0():
    """EfficientNet-B0: MBConv (expand 1x1, depthwise k, SE at 1x1, project 1x1)."""
    cfg = [(1, 3, 16, 1, 1), (6, 3, 24, 2, 2), (6, 5, 40, 2, 2), (6, 3, 80, 3, 2),
           (6, 5, 112, 3, 1), (6, 5, 192, 4, 2), (6, 3, 320, 1, 1)]
    out, h, c = [conv(3, 32, 3, 2, 224)], 112, 32
    for t, k, co, n, s in cfg:
        for i in range(n):
            st = s if i == 0 else 1
            e = c * t
            if t != 1:
                out.append(conv(c, e, 1, 1, h, pad=0))
            out.append(dw(e, k, st, h))
            h = _out(h, st)
            sq = max(1, c // 4)
            out += [conv(e, sq, 1, 1, 1, pad=0), conv(sq, e, 1, 1, 1, pad=0),
                    conv(e, co, 1, 1, h, pad=0)]
            c = co
    return out + [conv(320, 1280, 1, 1, 7, pad=0), gemm(1280, 1000)]


def vgg16():
    out, h, c = [], 224, 3
    for co, n in ((64, 2), (128, 2), (256, 3), (512, 3), (512, 3)):
        for _ in range(n):
            out.append(conv(c, co, 3, 1, h))
            c = co
        h //= 2
    return out + [gemm(25088, 4096), gemm(4096, 4096), gemm(4096, 1000)]


def convnext_tiny():
    """ConvNeXt-T: 4x4 stride 4 stem, per block a depthwise 7x7 and two Linear layers on the
    channels-last map (MatMul over H*W tokens), 2x2 stride 2 downsampling; one block a stage."""
    out, h = [conv(3, 96, 4, 4, 224, pad=0)], 56
    dims = (96, 192, 384, 768)
    for i, d in enumerate(dims):
        out += [dw(d, 7, 1, h), matmul(d, 4 * d, h * h), matmul(4 * d, d, h * h)]
        if i < 3:
            out.append(conv(d, dims[i + 1], 2, 2, h, pad=0))
            h //= 2
    return out + [gemm(768, 1000)]


def unet_decoder():
    """U-Net's up-convolutions (2x2, stride 2) on a 256x256 input's encoder."""
    return [deconv(1024, 512, 2, 2, 16, 0), deconv(512, 256, 2, 2, 32, 0),
            deconv(256, 128, 2, 2, 64, 0), deconv(128, 64, 2, 2, 128, 0)]


def bert_base(tokens=128):
    return [matmul(768, 768, tokens), matmul(768, 3072, tokens), matmul(3072, 768, tokens),
            gemm(768, 768), gemm(768, 2)]


def quartznet_block():
    """A QuartzNet / Jasper 1-D block: a wide 1-D convolution, a pointwise one, a strided one."""
    return [conv(64, 256, 33, 2, 256, dims=1), conv(256, 256, 1, 1, 128, pad=0, dims=1),
            conv(256, 256, 11, 1, 128, dims=1), conv(256, 512, 1, 1, 128, pad=0, dims=1)]


SWEEP = {
    "resnet18": resnet_basic((2, 2, 2, 2)),
    "resnet50": resnet_bottleneck((3, 4, 6, 3)),
    "googlenet": googlenet(),
    "alexnet": alexnet(),
    "mobilenet_v2": mobilenet_v2(),
    "shufflenet_v1_g3": shufflenet_v1(3),
    "regnet_y_400mf": regnet((48, 104, 208, 440), (1, 3, 6, 6), 8, True),
    "regnet_x_400mf": regnet((32, 64, 160, 384), (1, 2, 7, 12), 16, False),
    "vit_ti16": vit(192, 768),
    "dcgan_generator": dcgan_generator(),
    "fcn_upsample": fcn_upsample(),
    "wav2vec2_features": wav2vec2_features(),
}

HELD_OUT = {
    "resnext50_32x4d": resnet_bottleneck((3, 4, 6, 3), groups=32, width_per_group=4),
    "mobilenet_v3_large": mobilenet_v3_large(),
    "shufflenet_v1_g8": shufflenet_v1(8),
    "shufflenet_v2": shufflenet_v2(),
    "regnet_y_800mf": regnet((64, 144, 320, 784), (1, 3, 8, 2), 16, True),
    "densenet121": densenet121(),
    "squeezenet1_1": squeezenet11(),
    "efficientnet_b0": efficientnet_b0(),
    "vgg16": vgg16(),
    "convnext_tiny": convnext_tiny(),
    "vit_s16": vit(384, 1536),
    "bert_base": bert_base(),
    "unet_decoder": unet_decoder(),
    "quartznet_block": quartznet_block(),
}


def layers(networks, src_dtype, src_layout="nhwc"):
    """[(network, Layer)] of `networks` for one source type, each distinct Layer once (its first
    network named)."""
    from reorder.models.onednn_runtime import make_layer
    seen, out = set(), []
    for net, specs in networks.items():
        for kind, src, w, *rest in specs:
            if kind in ("conv", "deconv"):
                st, pads, g = rest
                layer = make_layer(kind, src, w, st, pads, groups=g, src_dtype=src_dtype,
                                   src_layout=src_layout)
            else:
                layer = make_layer(kind, src, w, src_dtype=src_dtype)
            if layer not in seen:
                seen.add(layer)
                out.append((net, layer))
    return out
