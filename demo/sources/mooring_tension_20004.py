# %% [markdown]
# # Mooring line tensions — 20-004 spread mooring
#
# Offshore construction vessel on an eight-point chain spread mooring in 45 m of water.
# Quasi-static check of the most loaded line for the operating limit, against the DNV intact
# safety factor of 1.67 on the minimum breaking load (MBL).
#
# Each line is a catenary on a horizontal seabed: with horizontal tension H, submerged weight w
# per metre and water depth h, the top tension is T = H + w·h and the suspended length
# s = √(h² + 2hH/w).

# %%
import numpy as np
import pandas as pd
import matplotlib.pyplot as plt

PROJECT = r"\\srv-calc-01\projects\2020\20-004"

lines = pd.read_csv(PROJECT + r"\inputs\mooring_lines.csv", index_col="line")

site = {}
with open(PROJECT + r"\inputs\site_conditions.txt") as f:
    for row in f:
        if row.strip() and not row.startswith("#"):
            key, value = row.split("=")
            site[key.strip()] = float(value)
site

# %% [markdown]
# The environmental force (wind + current + mean wave drift, all from the same direction) is
# shared by the lines whose anchors lie to windward, in proportion to cos(azimuth − direction).
# Lines on the lee side keep their pretension. A first estimate; the dynamic analysis follows in OrcaFlex.

# %%
depth = site["water_depth_m"]
env_kN = site["wind_force_kN"] + site["current_force_kN"] + site["wave_drift_force_kN"]
weather = np.radians(site["environment_from_deg"])

# lines whose anchors lie to windward take the load
share = np.cos(np.radians(lines["azimuth_deg"]) - weather).clip(lower=0)
lines["H_kN"] = lines["pretension_kN"] + env_kN * share / share.sum()
lines["top_tension_kN"] = lines["H_kN"] + lines["w_sub_kN_m"] * depth
lines["suspended_m"] = np.sqrt(depth**2 + 2 * depth * lines["H_kN"] / lines["w_sub_kN_m"])
lines["safety_factor"] = lines["mbl_kN"] / lines["top_tension_kN"]
lines.round(2)

# %%
worst = lines["top_tension_kN"].idxmax()
print(f"Environmental force: {env_kN:.0f} kN from {site['environment_from_deg']:.0f} deg")
print(f"Most loaded line: {worst}, T = {lines.loc[worst, 'top_tension_kN']:.0f} kN, "
      f"SF = {lines.loc[worst, 'safety_factor']:.2f} (required 1.67)")

# %%
fig, ax = plt.subplots(figsize=(7, 3.5))
for name in [worst, lines["top_tension_kN"].idxmin()]:
    H, w = lines.loc[name, "H_kN"], lines.loc[name, "w_sub_kN_m"]
    x_top = H / w * np.arccosh(1 + w * depth / H)
    x = np.linspace(0, x_top, 200)
    ax.plot(x, H / w * (np.cosh(w * x / H) - 1) - depth, label=f"{name} (H = {H:.0f} kN)")
ax.set_title("20-004 catenary profiles, touchdown point at x = 0")
ax.set_xlabel("Horizontal distance from touchdown [m]")
ax.set_ylabel("Elevation relative to water line [m]")
ax.legend();
