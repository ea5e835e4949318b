"""One transformer encoder block (BERT-base sized): the zoo's matmul/softmax/layer-norm/gelu model."""
from __future__ import annotations


def _layer_norm(net, x, name: str, hidden: int):
    R = net.relax.op
    gamma = net.weight(f"{name}_gamma", (hidden,))
    beta = net.weight(f"{name}_beta", (hidden,))
    # gamma near 1 keeps the block's output scale like a trained model's
    net.params[f"{name}_gamma"] += 1.0
    return net.emit(R.nn.layer_norm(x, gamma, beta, axes=[-1]))


def _heads(net, x, batch: int, seq: int, heads: int, head_dim: int):
    """[B, S, H*D] -> [B, H, S, D]"""
    R = net.relax.op
    y = net.emit(R.reshape(x, (batch, seq, heads, head_dim)))
    return net.emit(R.permute_dims(y, [0, 2, 1, 3]))


def bert_block_body(net, x, batch: int, seq: int, hidden: int, heads: int):
    """Self-attention + feed-forward, each with a residual add and a post layer norm."""
    R = net.relax.op
    head_dim = hidden // heads
    q = _heads(net, net.dense(x, "q", hidden, hidden), batch, seq, heads, head_dim)
    k = _heads(net, net.dense(x, "k", hidden, hidden), batch, seq, heads, head_dim)
    v = _heads(net, net.dense(x, "v", hidden, hidden), batch, seq, heads, head_dim)
    scores = net.emit(R.matmul(q, net.emit(R.permute_dims(k, [0, 1, 3, 2]))))
    scores = net.emit(R.multiply(scores, net.relax.const(head_dim ** -0.5, net.dtype)))
    probs = net.emit(R.nn.softmax(scores, axis=-1))
    ctx = net.emit(R.permute_dims(net.emit(R.matmul(probs, v)), [0, 2, 1, 3]))
    ctx = net.emit(R.reshape(ctx, (batch, seq, hidden)))
    attn = net.dense(ctx, "attn_out", hidden, hidden)
    y = _layer_norm(net, net.emit(R.add(attn, x)), "ln1", hidden)
    h = net.emit(R.nn.gelu(net.dense(y, "ffn1", hidden, 4 * hidden)))
    h = net.dense(h, "ffn2", 4 * hidden, hidden)
    return _layer_norm(net, net.emit(R.add(h, y)), "ln2", hidden)
