"""Plain-NumPy references for wengert.nn's losses, written from the formulas of PyTorch's
documentation (torch.nn.CrossEntropyLoss, NLLLoss, BCELoss, BCEWithLogitsLoss,
SmoothL1Loss, HuberLoss, KLDivLoss) one example at a time, with none of wengert's code:
the independent check of the loss values where PyTorch is not installed (CI).  Where it
is, tests/test_nn_losses.py checks these references against PyTorch too."""
import numpy


def reduce(loss, reduction, count=None):
    """PyTorch's reductions of the per-element losses: 'mean' divides the sum by `count`
    (by default the number of elements)."""
    loss = numpy.asarray(loss, dtype=float)
    if reduction == "none":
        return loss
    if reduction == "sum":
        return loss.sum()
    with numpy.errstate(invalid="ignore", divide="ignore"):        # (0/0 is nan, as there)
        return loss.sum() / (loss.size if count is None else count)


def _examples(input, target):
    """The rows of scores (N, C[, d1, ...]) or (C,) with their targets, one example per
    row: the classes on axis 1 (axis 0 for one example), as in PyTorch's layout; and the
    shape of one loss per example."""
    input = numpy.asarray(input, dtype=float)
    target = numpy.asarray(target)
    if input.ndim == 1:                                        # one example
        return input[None], target[None], ()
    rows = numpy.moveaxis(input, 1, -1).reshape(-1, input.shape[1])
    each = input.shape[:1] + input.shape[2:]
    if target.shape == input.shape:                            # class probabilities
        return rows, numpy.moveaxis(target, 1, -1).reshape(-1, input.shape[1]), each
    return rows, target.reshape(-1), each


def _log_softmax(row):
    return row - numpy.log(numpy.sum(numpy.exp(row)))


def nll_loss(input, target, weight=None, ignore_index=-100, reduction="mean",
             label_smoothing=0.0, log_probabilities=True):
    """NLLLoss: l_n = -w[y_n] x[n, y_n], 0 where y_n = ignore_index; the mean divides by the
    sum of w[y_n] over the examples not ignored.  With label_smoothing ε (cross_entropy's):
    (1 - ε) l_n + ε/C sum_c w_c (-x[n, c]), the mean's denominator unchanged."""
    rows, labels, each = _examples(input, target)
    classes = rows.shape[1]
    w = numpy.ones(classes) if weight is None else numpy.asarray(weight, dtype=float)
    losses, counted = [], 0.0
    for row, y in zip(rows, labels):
        logp = row if log_probabilities else _log_softmax(row)
        if y == ignore_index:
            losses.append(0.0)
            continue
        loss = -w[y] * logp[y]
        if label_smoothing:
            smooth = -sum(w[c] * logp[c] for c in range(classes)) / classes
            loss = (1 - label_smoothing) * loss + label_smoothing * smooth
        losses.append(loss)
        counted += w[y]
    losses = numpy.array(losses).reshape(each)
    return reduce(losses, reduction, counted)


def cross_entropy(input, target, weight=None, ignore_index=-100, reduction="mean",
                  label_smoothing=0.0):
    """CrossEntropyLoss: nll_loss of log_softmax(input) for class indices; for class
    probabilities y, l_n = -sum_c w_c y[n, c] log_softmax(x)[n, c], y first mixed with
    the uniform distribution, (1 - ε) y + ε/C, and the mean over the examples."""
    target = numpy.asarray(target)
    if target.dtype.kind in "iu":
        return nll_loss(input, target, weight, ignore_index, reduction, label_smoothing,
                        log_probabilities=False)
    rows, probabilities, each = _examples(input, target)
    classes = rows.shape[1]
    w = numpy.ones(classes) if weight is None else numpy.asarray(weight, dtype=float)
    losses = []
    for row, p in zip(rows, probabilities):
        p = (1 - label_smoothing) * p + label_smoothing / classes
        logp = _log_softmax(row)
        losses.append(-sum(w[c] * p[c] * logp[c] for c in range(classes)))
    return reduce(numpy.array(losses).reshape(each), reduction)


def _log_sigmoid(x):
    return -numpy.log1p(numpy.exp(-x))


def binary_cross_entropy_with_logits(input, target, weight=None, reduction="mean",
                                     pos_weight=None):
    """BCEWithLogitsLoss: l = -w (p y log σ(x) + (1 - y) log(1 - σ(x))), p the pos_weight;
    log(1 - σ(x)) = log σ(-x).  (For moderate logits: the tests' are below 10.)"""
    x, y = numpy.asarray(input, dtype=float), numpy.asarray(target, dtype=float)
    p = 1.0 if pos_weight is None else numpy.asarray(pos_weight, dtype=float)
    w = 1.0 if weight is None else numpy.asarray(weight, dtype=float)
    loss = -w * (p * y * _log_sigmoid(x) + (1 - y) * _log_sigmoid(-x))
    return reduce(numpy.broadcast_to(loss, x.shape), reduction)


def binary_cross_entropy(input, target, weight=None, reduction="mean"):
    """BCELoss: l = -w (y log x + (1 - y) log(1 - x)), each logarithm clamped at -100."""
    x, y = numpy.asarray(input, dtype=float), numpy.asarray(target, dtype=float)
    w = 1.0 if weight is None else numpy.asarray(weight, dtype=float)
    with numpy.errstate(divide="ignore"):
        log_x = numpy.maximum(numpy.log(x), -100.0)
        log_1mx = numpy.maximum(numpy.log(1 - x), -100.0)
    loss = -w * (y * log_x + (1 - y) * log_1mx)
    return reduce(numpy.broadcast_to(loss, x.shape), reduction)


def smooth_l1_loss(input, target, reduction="mean", beta=1.0):
    """SmoothL1Loss: 0.5 d²/β where |d| < β, else |d| - 0.5 β; β = 0 is |d|."""
    d = numpy.asarray(input, dtype=float) - numpy.asarray(target, dtype=float)
    if beta == 0:
        return reduce(numpy.abs(d), reduction)
    return reduce(numpy.where(numpy.abs(d) < beta, 0.5 * d * d / beta,
                              numpy.abs(d) - 0.5 * beta), reduction)


def huber_loss(input, target, reduction="mean", delta=1.0):
    """HuberLoss: 0.5 d² where |d| < δ, else δ (|d| - 0.5 δ)."""
    d = numpy.asarray(input, dtype=float) - numpy.asarray(target, dtype=float)
    return reduce(numpy.where(numpy.abs(d) < delta, 0.5 * d * d,
                              delta * (numpy.abs(d) - 0.5 * delta)), reduction)


def kl_div(input, target, reduction="mean", log_target=False):
    """KLDivLoss: l = y (log y - x), 0 where y = 0; or exp(t) (t - x) for log-probability
    targets t.  'batchmean' divides the sum by the batch size (the first dimension)."""
    x, y = numpy.asarray(input, dtype=float), numpy.asarray(target, dtype=float)
    if log_target:
        loss = numpy.exp(y) * (y - x)
    else:
        with numpy.errstate(divide="ignore", invalid="ignore"):
            loss = numpy.where(y > 0, y * (numpy.log(y) - x), 0.0)
    if reduction == "batchmean":
        return loss.sum() / (x.shape[0] if x.ndim else 1)
    return reduce(loss, reduction)
