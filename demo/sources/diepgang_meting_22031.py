# %% [markdown]
# # Diepgangmeting en trim — 22-031
#
# Chemicaliëntanker 22-031 (Lpp 112,0 m), diepgangmeting na het laden in Moerdijk op 14-09-2022.
# Uit de zes afgelezen diepgangmerken volgen de gemiddelde diepgang voor, midscheeps en achter,
# de **trim** en de *quarter mean draught* (het gewogen gemiddelde dat de doorbuiging van het schip meeneemt).
#
# NB: de aflezingen staan nog op mijn bureaublad; nog naar de projectmap zetten.

# %%
import pandas as pd

metingen = pd.read_csv(r"C:\Users\pvdberg\Desktop\diepgangen_22031.csv")
metingen

# %%
metingen["positie"] = metingen["merk"].str.split().str[0]
gemiddeld = metingen.groupby("positie", sort=False)["diepgang_m"].mean()
gemiddeld.round(3)

# %%
T_voor, T_midden, T_achter = gemiddeld["voor"], gemiddeld["midden"], gemiddeld["achter"]
trim = T_achter - T_voor
quarter_mean = (T_voor + 6 * T_midden + T_achter) / 8
opbuiging = (T_voor + T_achter) / 2 - T_midden

print(f"Trim (stuurlastig +): {trim:.2f} m")
print(f"Quarter mean draught: {quarter_mean:.3f} m")
print(f"Opbuiging (hogging +): {opbuiging * 1000:.0f} mm")

# %% [markdown]
# Het schip ligt 0,63 m stuurlastig en buigt ca. 35 mm op (hogging); de quarter mean draught
# gaat naar de ladingberekening (deplacement uit de hydrostatica).
