# SPDX-License-Identifier: BSD-2-Clause
"""The application start of tests/bench/bench_app.sh.

Run by the Python of the application image (PYTHONHOME=MNT, LD_LIBRARY_PATH=MNT/lib, see
bench_app.sh): imports several large packages and builds objects that read their data files:
a matplotlib figure drawn with the Agg backend (rc file, the font list built from the TrueType
fonts of mpl-data), babel locales (CLDR .dat files), pytz and zoneinfo time zones (tzfiles),
the iris data set of scikit-learn (csv), a random forest, a pandas frame with time zones,
scipy statistics, signal and sparse code, a sympy integral, a networkx graph.

Prints one line of results that depend on the data only (compared with a reference run), then
"outside N": the modules imported and the shared objects mapped from outside sys.prefix (glibc
excepted), which must be 0 for the start to count as one from the image. Exit status 0.
"""
import os
import sys

import numpy as np
import scipy.optimize
import scipy.signal
import scipy.sparse.linalg
import scipy.stats
import pandas as pd
import sklearn.datasets
import sklearn.ensemble
import sympy
import babel
import babel.dates
import babel.numbers
import pytz
import zoneinfo
import networkx as nx
import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
from matplotlib import font_manager  # noqa: E402

import datetime  # noqa: E402

out = []
# matplotlib: a drawn figure (fonts, rc), the font list
fig, ax = plt.subplots(figsize=(4, 3), dpi=50)
ax.plot(np.arange(20), np.arange(20) ** 2, label="squares")
ax.set_title("squashkit app start")
ax.legend()
fig.canvas.draw()
out.append("fonts=%d" % len({f.name for f in font_manager.fontManager.ttflist}))
out.append("canvas=%d" % int(np.asarray(fig.canvas.buffer_rgba()).sum() % 1000003))
# babel: several locales
when = datetime.date(2024, 2, 29)
for loc in ("de_DE", "fr_FR", "ja_JP", "ru_RU", "ar_EG", "pt_BR", "zh_Hans_CN", "hi_IN"):
    lo = babel.Locale.parse(loc)
    out.append("%s:%d:%s:%s" % (loc, len(lo.territories), babel.dates.format_date(when, "long", locale=lo),
                                babel.numbers.format_currency(1234.5, "EUR", locale=lo)))
# pytz and zoneinfo
stamp = datetime.datetime(2024, 7, 1, 12, 0)
for tz in ("Europe/Berlin", "America/New_York", "Asia/Tokyo", "Australia/Sydney", "America/Sao_Paulo"):
    out.append("%s=%s" % (tz, pytz.timezone(tz).localize(stamp).strftime("%z")))
    out.append("zi=%s" % zoneinfo.ZoneInfo(tz).utcoffset(stamp))
# scikit-learn: a data set from its csv files and a model
iris = sklearn.datasets.load_iris()
rf = sklearn.ensemble.RandomForestClassifier(n_estimators=20, random_state=0).fit(iris.data, iris.target)
out.append("iris=%d:%d" % (iris.data.shape[0], int(rf.predict(iris.data).sum())))
# pandas with time zones
df = pd.DataFrame({"k": np.arange(1000) % 7, "v": np.arange(1000.0)},
                  index=pd.date_range("2024-01-01", periods=1000, freq="h", tz="Europe/Paris"))
out.append("pandas=%.1f" % df.groupby("k")["v"].mean().sum())
# scipy
out.append("norm=%.6f" % scipy.stats.norm.cdf(1.0))
b, a = scipy.signal.butter(4, 0.2)
out.append("butter=%.6f" % b.sum())
m = scipy.sparse.diags([1.0, -2.0, 1.0], [-1, 0, 1], shape=(200, 200), format="csc")
out.append("sparse=%.6f" % scipy.sparse.linalg.spsolve(m, np.ones(200))[100])
out.append("opt=%.6f" % scipy.optimize.minimize_scalar(lambda x: (x - 2.5) ** 2).x)
# sympy
x = sympy.Symbol("x")
out.append("sympy=%s" % sympy.integrate(sympy.sin(x) ** 2 * sympy.exp(x), x))
# networkx
g = nx.karate_club_graph()
out.append("karate=%d:%d" % (g.number_of_edges(), len(nx.shortest_path(g, 0))))
print(" ".join(out))

# everything from the image: modules and mapped shared objects under sys.prefix
prefix = os.path.realpath(sys.prefix) + os.sep
glibc = ("ld-linux", "libc.so", "libm.so", "libpthread.so", "libdl.so", "librt.so", "libutil.so",
         "libresolv.so", "libnss_", "libmvec.so", "libanl.so", "libcrypt.so", "libBrokenLocale")
outside = set()
for mod in list(sys.modules.values()):
    f = getattr(mod, "__file__", None)
    if f and not os.path.realpath(f).startswith(prefix) and not f.startswith(os.path.dirname(__file__)):
        outside.add(f)
with open("/proc/self/maps") as maps:
    for line in maps:
        parts = line.split(None, 5)
        if len(parts) == 6 and ".so" in parts[5]:
            f = parts[5].strip()
            if not os.path.realpath(f).startswith(prefix) and not os.path.basename(f).startswith(glibc):
                outside.add(f)
print("outside %d %s" % (len(outside), " ".join(sorted(outside)[:5])))
