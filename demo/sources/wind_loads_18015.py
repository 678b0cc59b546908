# %% [markdown]
# # Wind loads on the superstructure — 18-015
#
# Ro-ro ferry, 142 m. Lateral wind force and heeling moment on the windage areas above the
# waterline, beam wind, for the mooring and the stability checks.
#
# Per area: F = ½ ρ C_d A V(z)², with a power-law wind profile V(z) = V₁₀ (z / 10)^(1/7)
# measured from the waterline, V₁₀ = 25.7 m/s (50 kn, Beaufort 10).

# %%
import json
import pandas as pd

with open(r"\\srv-calc-01\projects\2018\18-015\inputs\windage_18015.json") as f:
    windage = json.load(f)

print(windage["vessel"], "-", len(windage["areas"]), "windage areas")

# %%
areas = pd.DataFrame(windage["areas"]).set_index("name")
rho = windage["air_density_kg_m3"]
v10 = windage["design_wind_speed_ms"]

z = areas["centroid_above_wl_m"].clip(lower=1.0)
areas["wind_speed_ms"] = v10 * (z / 10.0) ** (1 / 7)
areas["force_kN"] = 0.5 * rho * areas["cd"] * areas["area_m2"] * areas["wind_speed_ms"] ** 2 / 1000
areas["moment_kNm"] = areas["force_kN"] * (areas["centroid_above_wl_m"] + windage["draught_m"] / 2)
areas.round(1)

# %%
wind_force_kN = areas["force_kN"].sum()
wind_moment_kNm = areas["moment_kNm"].sum()
print(f"Total lateral wind force: {wind_force_kN:.0f} kN")
print(f"Heeling moment about half draught: {wind_moment_kNm:.0f} kNm")

# %% [markdown]
# The heeling lever for the stability booklet is the moment divided by the displacement
# (as a force). For comparison: the IS Code weather criterion uses a fixed pressure of 504 Pa.

# %%
delta_kN = windage["displacement_t"] * 9.81
lw_design = wind_moment_kNm / delta_kN
lw_imo = 0.504 * (areas["area_m2"] * (areas["centroid_above_wl_m"] + windage["draught_m"] / 2)).sum() / delta_kN
print(f"Wind heeling lever, design wind: {lw_design:.3f} m")
print(f"Wind heeling lever lw1, IS Code 504 Pa: {lw_imo:.3f} m")
