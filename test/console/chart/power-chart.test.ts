import t from 'tap'
import { powerChart, type ChartInput } from '../../../src/console/chart/power-chart.ts'
import { parisDayMs } from '../../../src/contract/paris-day.ts'

const Q = 900_000

function input (day: string, o: Partial<ChartInput> = {}): ChartInput {
  const { startMs, endMs } = parisDayMs(day)
  const n = (endMs - startMs) / Q
  return {
    startMs, endMs, slotMs: Q,
    available: Array.from({ length: n }, (_, k) => ({ startMs: startMs + k * Q, kw: 40 + (k % 10) })),
    milestones: [{ startMs: startMs + 16 * Q, deadlineMs: startMs + 32 * Q, energyKwh: 120, powerKw: 30 }],
    constraints: [],
    title: `Puissance disponible ${day}`,
    tableName: 'Créneaux',
    ...o,
  }
}

const count = (svg: string, re: RegExp) => (svg.match(re) ?? []).length
const hourLabels = (svg: string) => [...svg.matchAll(/<text class="hour[^"]*"[^>]*>(\d\d)<\/text>/g)].map(m => m[1])

for (const [day, slots, hours] of [['2027-03-28', 92, 23], ['2026-11-22', 96, 24], ['2026-10-25', 100, 25]] as const) {
  t.test(`a ${slots}-slot day draws ${slots} slots and ${hours} hours`, async t => {
    const svg = powerChart(input(day)).toString().replace(/&#39;/g, "'")
    t.equal(count(svg, /<rect class="slot"/g), slots, 'one hover slot per quarter-hour')
    t.equal(count(svg, /V[\d.]+H/g), slots, 'one step of the available-power area per quarter-hour')
    t.equal(hourLabels(svg).length, hours + 1, 'a label per hour, and the end of the day')
    t.match(svg, new RegExp(`sur ${slots} quarts d'heure \\(${hours} h`), 'the description states the day length')
  })
}

t.test('DST days mark the skipped and the repeated hour in the chart', async t => {
  const spring = powerChart(input('2027-03-28')).toString()
  t.same(hourLabels(spring).slice(0, 3), ['00', '01', '03'])
  t.equal(count(spring, /class="skipped-hour"/g), 1)
  t.match(spring, /02 h sautée/)
  t.equal(count(spring, /class="repeated-hour"/g), 0)
  const autumn = powerChart(input('2026-10-25')).toString()
  t.same(hourLabels(autumn).slice(0, 4), ['00', '01', '02', '02'])
  t.equal(count(autumn, /class="repeated-hour"/g), 1)
  t.match(autumn, /02 h répétée/)
  t.match(autumn, /02:15 \(UTC\+01:00\)/, 'a slot of the second 02 h says which one it is')
  t.match(autumn, /02:15 \(UTC\+02:00\)/)
  t.notMatch(powerChart(input('2026-11-22')).toString(), /sautée|répétée/)
})

t.test('floors are lines at their kW, curtailments hatched columns, each as many as programmed', async t => {
  const { startMs } = parisDayMs('2026-11-22')
  const svg = powerChart(input('2026-11-22', {
    constraints: [
      { startMs, endMs: startMs + Q, minKw: 20 },
      { startMs: startMs + Q, endMs: startMs + 2 * Q, minKw: 100 },
      { startMs: startMs + 2 * Q, endMs: startMs + 3 * Q, maxKw: 0 },
    ],
  })).toString()
  t.equal(count(svg, /<line class="floor[ "]/g), 2)
  t.equal(count(svg, /<line class="floor over"/g), 1, 'the 100 kW floor is over the 41 kW available at 00:15: infeasible, from the series alone')
  t.equal(count(svg, /<rect class="curtailment"/g), 1)
  t.match(svg, /Plancher 100 kW de 00:15 à 00:30/)
  t.match(svg, /Effacement \(0 kW max\) de 00:30 à 00:45/)
  t.match(svg.replace(/&#39;/g, "'"), /1 jalon d'énergie, 2 planchers et 1 effacement de la consigne/)
  // The y axis grows to hold a floor above the available power (100 kW > 49 kW).
  const yTop = Math.max(...[...svg.matchAll(/text-anchor="end" fill="#222222">([\d ,]+)<\/text>/g)].map(m => Number(m[1]!.replace(/\s/g, '').replace(',', '.'))))
  t.ok(yTop >= 100, `axis top ${yTop} kW`)
})

t.test('the chart is an accessible image: role, title, description pointing to the table', async t => {
  const svg = powerChart(input('2026-11-22')).toString().replace(/&#39;/g, "'")
  t.match(svg, /^<svg [^>]*role="img" aria-labelledby="chart-title chart-desc"/)
  t.match(svg, /<title id="chart-title">Puissance disponible 2026-11-22<\/title>/)
  t.match(svg, /<desc id="chart-desc">[^<]*de 40 à 49 kW[^<]*Le tableau « Créneaux » donne chaque valeur\.<\/desc>/)
  t.notMatch(svg, /style=/, 'no style attribute: the console CSP allows none inline')
  t.match(svg, /120 kWh/, 'the milestone is drawn with its energy')
})

t.test('text in the chart is escaped', async t => {
  const svg = powerChart(input('2026-11-22', { title: 'Dépôt <script>alert(1)</script>' })).toString()
  t.notMatch(svg, /<script>/)
  t.match(svg, /Dépôt &lt;script&gt;alert\(1\)&lt;\/script&gt;/)
})

t.test('a milestone label is painted over the curtailments and floors, so a hatched column never hides it', async t => {
  const { startMs } = parisDayMs('2026-11-22')
  // The milestone's deadline (slot 32) sits inside a curtailment, where its label is drawn.
  const svg = powerChart(input('2026-11-22', { constraints: [{ startMs: startMs + 28 * Q, endMs: startMs + 33 * Q, maxKw: 0 }] })).toString()
  const label = svg.indexOf('>120 kWh</text>')
  t.ok(label > 0, 'the label is drawn')
  t.ok(label > svg.lastIndexOf('<rect class="curtailment"'), 'after the last curtailment (SVG paints in document order)')
  t.ok(label > svg.lastIndexOf('<line class="floor"') && label > svg.indexOf('<path class="available"'), 'and after the floors and the area')
})

t.test('a floor far above the available power is clipped at the top with its value, and flagged as infeasible', async t => {
  const { startMs } = parisDayMs('2026-11-22')
  // 8,000 kW asked of a site with 40 to 49 kW: the scale stays the site's, the floor is a marker.
  const svg = powerChart(input('2026-11-22', {
    constraints: [
      { startMs, endMs: startMs + Q, minKw: 8000 },
      { startMs: startMs + Q, endMs: startMs + 2 * Q, minKw: 20 },
    ],
  })).toString()
  const yTop = Math.max(...[...svg.matchAll(/text-anchor="end" fill="#222222">([\d  ,]+)<\/text>/g)].map(m => Number(m[1]!.replace(/\s/g, '').replace(',', '.'))))
  t.ok(yTop <= 100, `the axis stays near the available power (top ${yTop} kW)`)
  t.equal(count(svg, /class="clipped-marker clipped-floor"/g), 1, 'one marker for the clipped floor')
  t.match(svg, /plancher hors échelle : 8\s000 kW/, 'the marker says its value')
  t.equal(count(svg, /<line class="floor over"/g), 1, 'the floor over its available power is drawn as infeasible')
  t.equal(count(svg, /<line class="floor"/g), 1, 'the other one is a plain floor')
  t.match(svg, /Plancher 8\s000 kW de 00:00 à 00:15, infaisable : 40 kW disponibles/)
  t.match(svg, /dont 1 plancher au-delà de la puissance disponible \(infaisable\)/, 'the description says it too')
})

t.test('the legend draws exactly the series of the chart, each with its label', async t => {
  const { startMs } = parisDayMs('2026-11-22')
  const legend = (svg: string) => [...svg.matchAll(/<g class="legend-item legend-(\w+)"[^>]*>.*?<text[^>]*>([^<]+)<\/text><\/g>/g)].map(m => [m[1], m[2]])
  t.same(legend(powerChart(input('2026-11-22')).toString()), [['available', 'Puissance disponible'], ['milestone', 'Jalon (échéance)']])
  const programme = powerChart(input('2026-11-22', {
    available: [], milestones: [],
    constraints: [{ startMs, endMs: startMs + Q, minKw: 10 }, { startMs: startMs + Q, endMs: startMs + 2 * Q, maxKw: 0 }],
    delivered: [{ startMs, kw: 9 }, { startMs: startMs + 2 * Q, kw: 4000 }],
  })).toString()
  t.same(legend(programme).map(([s]) => s), ['floor', 'curtailment', 'delivered', 'clipped'], 'no available power nor milestone entry when none is drawn')
  t.notMatch(programme, /class="available"/, 'and no available-power area')
  t.equal(count(programme, /class="clipped-marker clipped-delivered"/g), 1, 'the delivered outlier is marked at the top')
  t.match(programme, /réalisé hors échelle : 4\s000 kW/)
  const wide = powerChart(input('2026-11-22', {
    constraints: [{ startMs, endMs: startMs + Q, minKw: 10 }, { startMs: startMs + Q, endMs: startMs + 2 * Q, minKw: 8000 }, { startMs: startMs + 2 * Q, endMs: startMs + 3 * Q, maxKw: 0 }],
    delivered: [{ startMs, kw: 9 }],
  })).toString()
  t.equal(legend(wide).length, 7, 'all seven series')
  t.match(wide, /<g class="legend-item legend-\w+" transform="translate\(0,18\)">/, 'wrapped to a second row rather than off the chart')
  t.notOk([...wide.matchAll(/<g class="legend-item[^"]*" transform="translate\(([\d.]+),/g)].some(m => Number(m[1]) > 800), 'no entry starts past the plot width')
})
