# %% [markdown]
# # Stabiliteit: GZ-kromme, vertrek volbeladen — 16-008
#
# Vrachtschip 16-008 (Lpp 98,5 m, B 15,8 m), beladingstoestand *vertrek, volbeladen, 10 % voorraden
# aan boord*, waterverplaatsing 7850 t. Toetsing aan de algemene stabiliteitscriteria van de
# IS Code 2008 (deel A, 2.2).
#
# De **oprichtende arm GZ** is de horizontale afstand tussen het gewichtszwaartepunt G en de
# verticaal door het drukkingspunt B bij een hellingshoek φ: GZ = KN − KG · sin φ.
# De KN-waarden (pantokarenen) komen uit de hydrostatische tabellen van de werf.

# %%
import numpy as np
import pandas as pd
import matplotlib.pyplot as plt

kn = pd.read_csv(r"\\srv-calc-01\projects\2016\16-008\invoer\kn_waarden_16008.csv")

KG = 6.42    # m, uit de gewichtsberekening
VVC = 0.18   # m, correctie vrij vloeistofoppervlak (ballast- en brandstoftanks)
KM = 8.18    # m, uit de hydrostatica bij T = 6,35 m

KG_gecorrigeerd = KG + VVC
GM = KM - KG_gecorrigeerd
print(f"KG gecorrigeerd = {KG_gecorrigeerd:.2f} m, GM = {GM:.2f} m")

# %%
kn["GZ_m"] = kn["KN_m"] - KG_gecorrigeerd * np.sin(np.radians(kn["hoek_graden"]))
kn.round(3)

# %% [markdown]
# ## Criteria (IS Code 2008, A 2.2)
#
# Oppervlakken onder de GZ-kromme in m·rad; de kromme wordt per graad lineair geïnterpoleerd.

# %%
hoek = np.arange(0, 81)
gz = np.interp(hoek, kn["hoek_graden"], kn["GZ_m"])

def oppervlak(van, tot):
    deel = (hoek >= van) & (hoek <= tot)
    return np.trapezoid(gz[deel], np.radians(hoek[deel]))

criteria = pd.DataFrame(
    [
        ("oppervlak 0-30°", oppervlak(0, 30), 0.055),
        ("oppervlak 0-40°", oppervlak(0, 40), 0.090),
        ("oppervlak 30-40°", oppervlak(30, 40), 0.030),
        ("GZ bij 30°", gz[30], 0.20),
        ("hoek max. GZ", float(hoek[np.argmax(gz)]), 25.0),
        ("GM", GM, 0.15),
    ],
    columns=["criterium", "waarde", "eis"],
)
criteria["voldoet"] = np.where(criteria["waarde"] >= criteria["eis"], "ja", "nee")
criteria.round(3)

# %%
fig, ax = plt.subplots(figsize=(8, 4.5))
ax.plot(kn["hoek_graden"], kn["GZ_m"], "o-", label="GZ (KG gecorrigeerd)")
ax.plot([0, 57.3], [0, GM], "--", label=f"GM-raaklijn (GM = {GM:.2f} m)")
ax.axvline(hoek[np.argmax(gz)], color="grey", linewidth=0.8, label="hoek max. GZ")
ax.set_title("Stabiliteit 16-008: GZ-kromme, vertrek volbeladen")
ax.set_xlabel("Hellingshoek φ [°]")
ax.set_ylabel("Oprichtende arm GZ [m]")
ax.set_xlim(0, 80)
ax.set_ylim(0, 1.8)
ax.grid(True, alpha=0.3)
ax.legend()
plt.show()

# %% [markdown]
# **Conclusie:** alle criteria van A 2.2 worden ruim gehaald; de maximale GZ ligt bij 40°.
# Het weercriterium (A 2.3) is apart berekend in het stabiliteitsboekje.
