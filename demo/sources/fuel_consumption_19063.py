# %% [markdown]
# # Fuel consumption per voyage leg — 19-063
#
# Supramax bulk carrier, main engine MCR 9960 kW. Heavy fuel oil consumption of the main engine
# for the charter's reference voyage Rotterdam – Singapore, from the engine's shop-test
# specific fuel oil consumption (SFOC) curve.

# %%
import numpy as np
import pandas as pd
import matplotlib.pyplot as plt

MCR_KW = 9960
sfoc = pd.read_csv(r"P:\19-063\data\sfoc_me_19063.csv")
sfoc

# %%
fig, ax = plt.subplots(figsize=(6, 3.5))
ax.plot(sfoc["load_pct"], sfoc["sfoc_g_kwh"], "s-", label="shop test")
ax.set_title("19-063 main engine SFOC")
ax.set_xlabel("Engine load [% MCR]")
ax.set_ylabel("SFOC [g/kWh]")
ax.legend();

# %% [markdown]
# Voyage legs: distance, service speed and the engine load for that speed from the speed–power
# curve of the sea trials (with 15 % sea margin). SFOC interpolated linearly in load.

# %%
legs = pd.DataFrame(
    {
        "distance_nm": [1450, 1920, 5020],
        "speed_kn": [13.5, 12.5, 13.0],
        "load_pct": [75, 65, 70],
    },
    index=["Rotterdam - Gibraltar", "Gibraltar - Suez", "Suez - Singapore"],
)
legs["hours"] = legs["distance_nm"] / legs["speed_kn"]
legs["sfoc_g_kwh"] = np.interp(legs["load_pct"], sfoc["load_pct"], sfoc["sfoc_g_kwh"])
legs["fuel_t"] = MCR_KW * legs["load_pct"] / 100 * legs["hours"] * legs["sfoc_g_kwh"] / 1e6
legs.round(1)

# %%
fuel_total_t = legs["fuel_t"].sum()
print(f"HFO for the voyage (main engine): {fuel_total_t:.0f} t")
print(f"Cost at 410 USD/t: {fuel_total_t * 410:,.0f} USD")

# %% [markdown]
# *Let op:* het brandstofverbruik is zonder hulpmotoren en ketel; SFOC volgens de fabrieksproef
# (ISO-condities, LCV 42 700 kJ/kg), dus in de praktijk enkele procenten hoger.
