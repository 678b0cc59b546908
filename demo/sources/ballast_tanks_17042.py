# %% [markdown]
# # Ballast tank volumes — 17-042
#
# Multipurpose cargo vessel, 130 m (Lpp 130.0 m, B 21.0 m, design draught 7.4 m).
# Question from the yard: total ballast capacity per tank group, to check the ballast
# condition "arrival, no cargo" in the loading manual.
#
# Source: tank table of the tank plan, **revision C** (the yard moved the WB4 bulkhead in rev. B).
# Volumes are moulded and 100 % full; no deduction for structure yet.

# %%
import pandas as pd

TANK_TABLE = r"\\srv-calc-01\projects\2017\17-042\inputs\tanks_17042c.csv"

tanks = pd.read_csv(TANK_TABLE)
tanks

# %% [markdown]
# Each tank is taken as a prism: volume = length between frames × mean sectional area
# (the mean of the sectional areas at the tank ends and at mid-length, read from the tank plan).

# %%
tanks["volume_m3"] = tanks["length_m"] * tanks["mean_area_m2"]
tanks[["tank", "group", "volume_m3"]]

# %% [markdown]
# ## Ballast volume per tank group

# %%
volumes = tanks.groupby("group")[["volume_m3"]].sum().round(1)
volumes

# %%
ballast_total = float(volumes["volume_m3"].sum().round(1))
ballast_total

# %%
SEAWATER = 1.025  # t/m3
print(f"Ballast water mass at {SEAWATER} t/m3: {ballast_total * SEAWATER:.1f} t")
print(f"Forepeak share of total ballast: {volumes.loc['forepeak', 'volume_m3'] / ballast_total:.1%}")

# %% [markdown]
# **Controle (PvdB, 12-06-2017):** ballastwatercapaciteit akkoord. De voorpiek (412,1 m³) en de
# achterste tanks (1284,6 m³) zijn nagerekend tegen het tankplan rev. C; de dubbele-bodemtanks
# midscheeps (2106,3 m³) ook. Aftrek voor constructie (ca. 2 %) volgt in de stabiliteitsberekening.
