# %% [markdown]
# # Engine room ventilation — 23-040 service operation vessel
#
# Required supply air flow for the main engine room to ISO 8861: the larger of
# (a) combustion air + air to remove the heat emission, and (b) 1.5 × combustion air.
# Diesel-electric plant, four generator sets of 1200 kW. Outside air 35 °C, permitted
# temperature rise ΔT = 12.5 K.

# %%
import pandas as pd

RHO_AIR = 1.13   # kg/m3 at 35 degC
CP_AIR = 1.01    # kJ/(kg K)
DELTA_T = 12.5   # K

engines_kW = 4 * 1200
m_air = 0.0023   # kg/(kW s), combustion air of 4-stroke diesels (maker's data)
q_combustion = engines_kW * m_air / RHO_AIR
print(f"Combustion air: {q_combustion:.2f} m3/s")

# %% [markdown]
# Heat emission into the engine room per source (makers' data where available, otherwise the
# ISO 8861 defaults).

# %%
heat = pd.Series(
    {
        "diesel generator sets (radiation, 2.5 %)": 0.025 * engines_kW,
        "alternators (air-cooled losses)": 4 * 9.5,
        "switchboards and converters": 22.0,
        "steam and exhaust piping": 15.0,
        "other (pumps, separators, lighting)": 12.0,
    },
    name="heat_kW",
)
heat.to_frame()

# %%
q_heat = heat.sum() / (RHO_AIR * CP_AIR * DELTA_T)
q_required = max(q_combustion + q_heat, 1.5 * q_combustion)
print(f"Heat emission {heat.sum():.0f} kW -> air for heat removal {q_heat:.2f} m3/s")
print(f"Required supply air: {q_required:.2f} m3/s = {q_required * 3600:,.0f} m3/h")

# %% [markdown]
# Four supply fans of 6.5 m³/s (two-speed) give 26 m³/s: sufficient. With one fan out of service
# they still give 19.5 m³/s, above 1.5 × combustion air (14.7 m³/s).
