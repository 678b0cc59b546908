# %% [markdown]
# # Hull form coefficients — 14-011 coaster series
#
# > **Superseded (2019).** This table uses the old convention (coefficients on Lpp instead of Lwl,
# > volumes without shell plating). The firm no longer uses it: take hydrostatics from the
# > loading computer model instead. Kept for reference only.
#
# Block, midship, prismatic and waterplane coefficients of the three hull variants of the
# 88 m coaster series, at design draught, from the faired lines plan.

# %%
import pandas as pd

hulls = pd.read_csv(r"\\SRV-CALC-01\Projects\2014\14-011\inputs\hullforms_14011.csv", index_col="variant")

# %%
coef = pd.DataFrame(index=hulls.index)
coef["Cb"] = hulls["volume_m3"] / (hulls["Lpp_m"] * hulls["B_m"] * hulls["T_m"])
coef["Cm"] = hulls["Am_m2"] / (hulls["B_m"] * hulls["T_m"])
coef["Cp"] = coef["Cb"] / coef["Cm"]
coef["Cwp"] = hulls["Awp_m2"] / (hulls["Lpp_m"] * hulls["B_m"])
coef.round(3)

# %% [markdown]
# Sanity check with Ayre's formula for the block coefficient, Cb = 1.06 − 1.68 Fn,
# at the service speed of 11.5 kn.

# %%
import math

speed = 11.5 * 0.5144  # m/s
froude = speed / math.sqrt(9.81 * 88.0)
print(f"Fn = {froude:.3f}, Ayre Cb = {1.06 - 1.68 * froude:.3f}")

# %% [markdown]
# Our variants are about 0.05 fuller than Ayre suggests, as usual for coasters that trade on
# deadweight. Variant B was chosen (largest Cwp, best initial stability).
