/**
 * The password rule in French, as the console's forms say it (the rule itself is
 * auth/password.ts's, shared with `epx user`, which words it in English).
 * @module
 */
import { PASSWORD_DISTINCT, PASSWORD_MAX, PASSWORD_MIN, passwordWeakness, type PasswordWeakness } from '../auth/password.ts'

/** The whole rule, for a form's hint and every refusal. */
export const PASSWORD_RULE_FR = `${PASSWORD_MIN} caractères au moins (${PASSWORD_MAX} au plus), dont ${PASSWORD_DISTINCT} différents ; ` +
  'pas une suite (abcdef, 123456), pas votre identifiant, pas un mot de passe courant (motdepasse, azerty…) même entouré de chiffres.'

const WEAKNESS_FR: Record<PasswordWeakness, string> = {
  short: `il compte moins de ${PASSWORD_MIN} caractères`,
  long: `il compte plus de ${PASSWORD_MAX} caractères`,
  'few-characters': `il compte moins de ${PASSWORD_DISTINCT} caractères différents`,
  run: "c'est une suite de caractères consécutifs",
  username: 'il contient votre identifiant',
  common: "c'est un mot de passe courant, que l'on essaie en premier",
}

/** Why the console refuses `password` for `username`, in French, with the rule; or undefined. */
export function passwordProblemFr (password: string, username: string): string | undefined {
  const weak = passwordWeakness(password, username)
  return weak && `Nouveau mot de passe refusé : ${WEAKNESS_FR[weak]}. Il faut ${PASSWORD_RULE_FR}`
}
