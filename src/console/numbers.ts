/**
 * Numbers as the console shows them: French notation (`52,5`), at most three decimals
 * (a watt in kW, a watt-hour in kWh).
 * @module
 */
const FR = new Intl.NumberFormat('fr-FR', { maximumFractionDigits: 3 })

export function frNumber (n: number): string {
  // Intl writes a narrow no-break space between thousands: kept, it is what French reads.
  return FR.format(n)
}
