"""Reading a results.h5: tables as {column: numpy array}, scalars, correlation rows."""
import h5py
import numpy as np


def table(f, path):
    """A table group as {column: numpy array} (strings decoded), or None."""
    if path not in f or not isinstance(f[path], h5py.Group):
        return None
    out = {}
    for k, d in f[path].items():
        if not isinstance(d, h5py.Dataset):
            continue
        v = d[()]
        if v.dtype.kind == "S":
            v = np.array([x.decode(errors="replace") for x in v])
        out[k] = v
    return out or None


def pick(t, column, value):
    """The first row of table `t` whose `column` equals `value`, as {column: value}, or None."""
    if t is None or value not in list(t[column]):
        return None
    i = list(t[column]).index(value)
    return {k: t[k][i] for k in t}


def scalar(f, path, default=""):
    if path not in f:
        return default
    v = f[path][()]
    return v.decode(errors="replace") if isinstance(v, bytes) else v


def correlation_of(corr, predictor, target):
    if corr is None:
        return None
    for i in range(len(corr["predictor"])):
        if corr["predictor"][i] == predictor and corr["target"][i] == target:
            return corr["pearson_r"][i], corr["spearman_rho"][i]
    return None
