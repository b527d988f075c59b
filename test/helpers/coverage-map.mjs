// .taprc `coverage-map`: every test file is measured against src/ only. The dist/ bundle
// counts where a process runs it under its own source map (mapped back to src/); under
// tsx it has an identity map and would only repeat src/ as one 3,500-line file.
export default () => 'src/**/*.ts'
