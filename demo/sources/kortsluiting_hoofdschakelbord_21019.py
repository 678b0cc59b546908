# %% [markdown]
# # Kortsluitstroom hoofdschakelbord 690 V — 21-019
#
# Sleephopperzuiger 21-019. Berekening van de prospectieve **kortsluitstroom** op de rail van het
# hoofdschakelbord (690 V, 60 Hz) bij een driefasige kortsluiting, om het schakelvermogen van de
# vermogensschakelaars te controleren (vereenvoudigde methode naar IEC 61363-1).
#
# - bijdrage generator: Ik'' = In / x''d (subtransiënte reactantie in p.u.)
# - bijdrage draaiende motoren: vuistregel 4 × nominale stroom
# - piekstroom: ip = κ · √2 · Ik'' met κ = 1,8

# %%
import math
import pandas as pd

gen = pd.read_csv(r"\\srv-calc-01\projects\2021\21-019\invoer\generatoren_21019.csv", index_col="generator")
gen

# %% [markdown]
# De havengenerator draait niet parallel met de hoofdgeneratoren (vergrendeling in het
# schakelbord), dus die telt niet mee.

# %%
gen["In_A"] = gen["S_kVA"] * 1000 / (math.sqrt(3) * gen["U_V"])
gen["Ik_kA"] = gen["In_A"] / gen["xd_subtransient_pu"] / 1000
parallel = gen[gen["parallel"] == "ja"]
gen.round({"In_A": 0, "Ik_kA": 2})

# %%
motor_kW = 2900          # draaiende motoren bij baggeren: pompen, boegschroef, lieren
cos_phi, eta = 0.85, 0.95
I_motor = motor_kW * 1000 / (math.sqrt(3) * 690 * cos_phi * eta)

Ik_gen = parallel["Ik_kA"].sum()
Ik_mot = 4 * I_motor / 1000
Ik_totaal = Ik_gen + Ik_mot
ip = 1.8 * math.sqrt(2) * Ik_totaal

print(f"Generatoren (3 parallel): Ik'' = {Ik_gen:.1f} kA")
print(f"Motorbijdrage:            Ik'' = {Ik_mot:.1f} kA")
print(f"Totaal:                   Ik'' = {Ik_totaal:.1f} kA, piekstroom ip = {ip:.1f} kA")

# %%
Icu, Icm = 65.0, 143.0   # kA, hoofdschakelaar ACB 4000 A
print("Uitschakelvermogen  Icu:", "voldoet" if Ik_totaal < Icu else "VOLDOET NIET", f"({Ik_totaal:.1f} < {Icu} kA)")
print("Inschakelvermogen   Icm:", "voldoet" if ip < Icm else "VOLDOET NIET", f"({ip:.1f} < {Icm} kA)")

# %% [markdown]
# **Conclusie:** het schakelvermogen voldoet, maar de marge op de piekstroom is klein (ca. 1,5 %).
# Bij uitbreiding met een vierde hoofdgenerator (Ik'' ≈ 69,7 kA, ip ≈ 177,5 kA) is een schakelaar
# met Icu ≥ 80 kA en Icm ≥ 180 kA nodig.
