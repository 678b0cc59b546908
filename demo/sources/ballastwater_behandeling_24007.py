# %% [markdown]
# # Ballastwaterbehandeling: capaciteit en pomptijd — 24-007
#
# Sleephopperzuiger 24-007. Keuze van het **ballastwaterbehandelingssysteem** (BWTS, UV met
# filter, D-2 norm van de BWM-conventie) en de tijd om al het ballastwater in of uit te pompen.
# Het systeem moet de volle ballastcapaciteit binnen 4 uur kunnen behandelen (eis van de reder).

# %%
import pandas as pd

tanks = pd.read_csv(r"P:\24-007\invoer\ballasttanks_24007.csv")
tanks

# %%
ballastwater_totaal = tanks["inhoud_m3"].sum()
ballastwater_totaal

# %% [markdown]
# Twee ballastpompen van 350 m³/h; het BWTS begrenst het debiet (alles gaat door het filter en
# de UV-reactor, ook bij het lossen).

# %%
pompen = 2 * 350          # m3/h
for bwts in (250, 300, 400):
    debiet = min(pompen, bwts)
    print(f"BWTS {bwts} m3/h: pomptijd {ballastwater_totaal / debiet:.1f} uur")

# %% [markdown]
# **Keuze:** BWTS van 300 m³/h: pomptijd 3,8 uur, binnen de eis van 4 uur.
