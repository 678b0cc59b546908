# %% [markdown]
# # Lightship weight estimate — 19-022 harbour tug
#
# 32 m ASD harbour tug. First estimate of lightship weight and centre of gravity per weight
# group, with a design margin per group (larger where the design is least mature).

# %%
import pandas as pd

weights = pd.DataFrame(
    {
        "weight_t": [212.0, 96.5, 41.2, 18.4, 12.8, 15.6],
        "lcg_m": [14.1, 10.2, 15.8, 19.5, 13.0, 11.5],
        "vcg_m": [2.95, 2.10, 4.60, 7.30, 3.90, 2.60],
    },
    index=["hull", "machinery", "outfitting", "deckhouse", "electrical", "piping"],
)
weights

# %%
margins = {"hull": 0.03, "machinery": 0.05, "outfitting": 0.08, "deckhouse": 0.05, "electrical": 0.06}

for group in weights.index:
    weights.loc[group, "margin_t"] = weights.loc[group, "weight_t"] * margins[group]

# %% [markdown]
# Piping had no margin in the list yet: 7 % (as for the 2016 tug, 16-019).

# %%
margins["piping"] = 0.07
weights["margin_t"] = weights["weight_t"] * weights.index.map(margins)
weights["total_t"] = weights["weight_t"] + weights["margin_t"]
weights.round(2)

# %%
lightship_t = weights["total_t"].sum()
lcg = (weights["total_t"] * weights["lcg_m"]).sum() / lightship_t
vcg = (weights["total_t"] * weights["vcg_m"]).sum() / lightship_t
print(f"Lightship weight incl. margins: {lightship_t:.1f} t")
print(f"LCG = {lcg:.2f} m from AP, VCG = {vcg:.2f} m above base")
