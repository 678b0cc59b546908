# %% [markdown]
# # Resistance and effective power — 23-012 patrol vessel
#
# Early estimate of calm-water resistance and required brake power, 54 m patrol vessel,
# speeds 10 to 22 kn. ITTC-1957 friction line with a form factor, residuary resistance from
# the systematic-series fit in the input file, correlation allowance C_A.
#
# R_T = ½ ρ S V² [ (1 + k) C_F + C_R + C_A ],  C_F = 0.075 / (log₁₀ Re − 2)²

# %%
import json
import numpy as np
import pandas as pd
import matplotlib.pyplot as plt

with open(r"\\srv-calc-01\projects\2023\23-012\inputs\main_particulars_23012.json") as f:
    ship = json.load(f)

RHO, NU, G = 1025.0, 1.19e-6, 9.81
speeds_kn = np.arange(10, 23, 2)

# %%
v = speeds_kn * 0.5144
froude = v / np.sqrt(G * ship["Lwl_m"])
cf = 0.075 / (np.log10(v * ship["Lwl_m"] / NU) - 2) ** 2
cr = np.interp(froude, ship["residuary"]["froude"], ship["residuary"]["cr_x1000"]) / 1000
ct = (1 + ship["form_factor"]) * cf + cr + ship["correlation_allowance"]

power = pd.DataFrame({"speed_kn": speeds_kn, "Fn": froude, "CF_x1000": cf * 1000, "CR_x1000": cr * 1000})
power["RT_kN"] = 0.5 * RHO * ship["wetted_surface_m2"] * v**2 * ct / 1000
power["PE_kW"] = power["RT_kN"] * v
power["PB_kW"] = power["PE_kW"] / ship["propulsive_efficiency"] * (1 + ship["sea_margin"])
power.round(2)

# %%
fig, ax = plt.subplots(figsize=(7, 4))
ax.plot(power["speed_kn"], power["PE_kW"], "o-", label="effective power $P_E$")
ax.plot(power["speed_kn"], power["PB_kW"], "s-", label="brake power $P_B$ (15 % sea margin)")
ax.axhline(0.85 * ship["installed_power_kW"], color="red", linestyle="--", label="85 % MCR installed")
ax.set_title("23-012 patrol vessel: power estimate")
ax.set_xlabel("Speed [kn]")
ax.set_ylabel("Power [kW]")
ax.legend()
plt.show()

# %%
v_max = np.interp(0.85 * ship["installed_power_kW"], power["PB_kW"], power["speed_kn"])
print(f"Service speed at 85 % MCR ({0.85 * ship['installed_power_kW']:.0f} kW): {v_max:.1f} kn")
